"""MkDocs build step (mkdocs-gen-files): files the site shows that live outside ``docs/``.

The notebooks (``notebooks/`` at the top of the repository) are rendered from a copy under
``notebooks/`` of the site, and the instance format's JSON Schema is copied beside them."""

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]

for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    with mkdocs_gen_files.open(f"notebooks/{notebook.name}", "wb") as out:
        out.write(notebook.read_bytes())

# The instance format's JSON Schema, linked from instance-format.md.
SCHEMA = ROOT / "asrpt_opt" / "data" / "schema" / "asrpt-instance-1.schema.json"
with mkdocs_gen_files.open("schema/asrpt-instance-1.schema.json", "wb") as out:
    out.write(SCHEMA.read_bytes())
