"""Reading inputs and writing outputs safely: the one check of an input file
(:func:`input_problem`) and the one way every output is written (:func:`write_atomically`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from os import PathLike
from pathlib import Path

__all__ = ["atomic_write_text", "input_problem", "write_atomically"]


def input_problem(path: str | PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as an input file, or None when it can: the one check
    every command applies before reading an instance, trace, preset or sample.

    Only regular files are read: a device (``/dev/zero``, ``/dev/urandom``), a pipe or a
    folder would be read without end or make no sense as a file. A name ending in ``/``
    names a folder, never the file of the same name.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    str or None
        The reason, in words for an error message.
    """
    text = os.fspath(path)
    if text.endswith(("/", os.sep)) and os.path.isfile(text.rstrip("/" + os.sep)):
        return "names a folder (trailing /), but is a file"
    try:
        info = os.stat(text)
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a device, pipe or socket cannot be read as input)"
    return None


def atomic_write_text(path: str | PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: into a temporary file of the same folder, then
    renamed over ``path``, so an interrupted or failed write never leaves a truncated file
    and never destroys the previous one.

    Parameters
    ----------
    path : path-like
    text : str
    """
    write_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: str | PathLike[str], write: Callable[[str], object]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``:
    readers see the old file or the new one, never half of one, and a failure (a full disk,
    an interrupt) leaves the old file intact and no temporary behind.

    A symbolic link at ``path`` is followed: its target is replaced, the link stays. A
    special file at ``path`` (a device such as ``/dev/null``, a named pipe) is written in
    place, since renaming over it would replace it with a regular file.

    Parameters
    ----------
    path : path-like
    write : callable
        Writes the whole file to the path it is given.

    Raises
    ------
    OSError
        With ``filename`` the path asked for (not the temporary one).
    """
    target = Path(os.path.realpath(path))
    try:
        if target.exists() and not target.is_file():
            write(str(target))
            return
        _replace_atomically(target, write)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None


#: A temporary name keeps at most this many bytes of the target's name, so that the name
#: stays within the file system's limit (255 bytes) however long the target's is.
_TMP_NAME_BYTES = 100


def _replace_atomically(target: Path, write: Callable[[str], object]) -> None:
    short = target.name.encode()[:_TMP_NAME_BYTES].decode(errors="ignore")
    fd, tmp = tempfile.mkstemp(prefix=f".{short}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes the file private; give it the mode a plain open() would have.
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
