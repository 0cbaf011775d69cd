"""DNN layer graphs: the 14 bundled PipeDream profiles and transformers from their shapes.

A model is a directed layer graph whose nodes carry forward and backward compute time (s, per
iteration of the profiled minibatch), output activation bytes and parameter bytes.

References
----------
.. [1] D. Narayanan et al., "PipeDream: generalized pipeline parallelism for DNN training",
   SOSP 2019 (the layer profiles).
.. [2] D. Narayanan et al., "Efficient large-scale language model training on GPU clusters
   using Megatron-LM", SC 2021 (transformer FLOP and communication counts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError, UnknownNameError

__all__ = ["MODELS", "DNNModel", "load_model", "parse_pipedream", "transformer"]

_PIPEDREAM = (
    "alexnet",
    "densenet121",
    "gnmt",
    "gnmt_large",
    "inception_v3",
    "nasnetalarge",
    "nasnetamobile",
    "resnet101",
    "resnet18",
    "resnet50",
    "resnext101",
    "resnext50",
    "squeezenet1_0",
    "vgg16",
)
# Published architecture numbers: layers, hidden size, heads, sequence length, vocabulary.
_TRANSFORMERS = {
    "gpt2-1.5b": (48, 1600, 25, 1024, 50257),
    "gpt3-6.7b": (32, 4096, 32, 2048, 50257),
}

#: Every model name :func:`load_model` accepts.
MODELS: tuple[str, ...] = _PIPEDREAM + tuple(_TRANSFORMERS)

_NODE = re.compile(
    r"^(?P<id>\S+) -- (?P<desc>.*) -- forward_compute_time=(?P<f>[-\d.e+]+), "
    r"backward_compute_time=(?P<b>[-\d.e+]+), activation_size=(?P<a>\[[^\]]*\]|[-\d.e+]+), "
    r"parameter_size=(?P<p>[-\d.e+]+)$"
)


@dataclass(frozen=True, kw_only=True)
class DNNModel:
    """A DNN as a layer graph, with its hot data as numpy arrays in topological order.

    Attributes
    ----------
    name : str
    graph : networkx.DiGraph
        Node attributes ``forward_s``, ``backward_s``, ``activation_bytes``,
        ``parameter_bytes``; edge u -> v carries u's output to v.
    order : tuple of str
        Topological order of the layers.
    compute_s, activation_bytes, parameter_bytes : ndarray
        Forward + backward time, output bytes and parameter bytes per layer, in ``order``.
    tp_allreduces_per_layer : int
        Activation all-reduces per layer and iteration under tensor parallelism (2 for the
        profiled CNN/RNN layers: forward and backward; 4 for transformer blocks, Megatron).
    source : str
    """

    name: str
    graph: nx.DiGraph
    order: tuple[str, ...]
    compute_s: NDArray[np.float64]
    activation_bytes: NDArray[np.float64]
    parameter_bytes: NDArray[np.float64]
    tp_allreduces_per_layer: int
    source: str

    @property
    def total_compute_s(self) -> float:
        """Forward + backward time of one iteration on one GPU."""
        return float(self.compute_s.sum())

    @property
    def total_parameter_bytes(self) -> float:
        """Bytes of all parameters (the gradient volume of data parallelism)."""
        return float(self.parameter_bytes.sum())

    def boundary_bytes(self, first_of_next: int) -> float:
        """Activation bytes crossing the cut before layer ``order[first_of_next]``.

        Each layer's output is counted once if any consumer lies after the cut.
        """
        position = {n: i for i, n in enumerate(self.order)}
        total = 0.0
        for i, node in enumerate(self.order[:first_of_next]):
            if any(position[v] >= first_of_next for v in self.graph.successors(node)):
                total += float(self.activation_bytes[i])
        return total


def _from_graph(name: str, g: nx.DiGraph, tp_allreduces: int, source: str) -> DNNModel:
    order = tuple(nx.lexicographical_topological_sort(g, key=_natural))
    attr = g.nodes
    return DNNModel(
        name=name,
        graph=g,
        order=order,
        compute_s=np.array([attr[n]["forward_s"] + attr[n]["backward_s"] for n in order]),
        activation_bytes=np.array([attr[n]["activation_bytes"] for n in order]),
        parameter_bytes=np.array([attr[n]["parameter_bytes"] for n in order]),
        tp_allreduces_per_layer=tp_allreduces,
        source=source,
    )


def _natural(node: str) -> tuple[int, str]:
    digits = re.sub(r"\D", "", node)
    return (int(digits) if digits else -1, node)


def parse_pipedream(text: str, *, name: str = "model", source: str = "<text>") -> DNNModel:
    """Parse a PipeDream ``graph.txt`` profile.

    Times are converted from milliseconds to seconds, multi-output activation lists are
    summed, and the ``Input`` node's forward time (data loading) is set to 0.

    Parameters
    ----------
    text : str
    name, source : str
        For the model and error messages.

    Returns
    -------
    DNNModel

    Raises
    ------
    ModelError
        Naming the line of a malformed node or edge.
    """
    g = nx.DiGraph()
    edges = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("\t"):
            parts = line.strip().split(" -- ")
            if len(parts) != 2:
                raise ModelError(f"{source}: line {lineno}: malformed edge {line.strip()!r}")
            edges.append((parts[0], parts[1], lineno))
            continue
        m = _NODE.match(line)
        if m is None:
            raise ModelError(f"{source}: line {lineno}: malformed node line")
        act = m.group("a")
        if act.startswith("["):
            act_bytes = sum(float(x) for x in act.strip("[]").split(";") if x.strip())
        else:
            act_bytes = float(act)
        forward = float(m.group("f")) / 1000.0
        if m.group("desc").startswith("Input"):
            forward = 0.0
        g.add_node(
            m.group("id"),
            desc=m.group("desc"),
            forward_s=forward,
            backward_s=max(float(m.group("b")), 0.0) / 1000.0,
            activation_bytes=act_bytes,
            parameter_bytes=float(m.group("p")),
        )
    for u, v, lineno in edges:
        if u not in g or v not in g:
            raise ModelError(f"{source}: line {lineno}: edge names an unknown node")
        g.add_edge(u, v)
    if g.number_of_nodes() == 0:
        raise ModelError(f"{source}: no layers")
    if not nx.is_directed_acyclic_graph(g):
        raise ModelError(f"{source}: the layer graph has a cycle")
    return _from_graph(name, g, 2, source)


def transformer(
    name: str,
    *,
    layers: int,
    hidden: int,
    heads: int,
    seq_len: int,
    vocab: int,
    batch: int = 8,
    effective_tflops: float = 40.0,
    bytes_per_value: int = 2,
) -> DNNModel:
    """A decoder-only transformer as a chain: embedding, ``layers`` blocks, output head.

    Forward FLOPs per block are 24 b s h^2 + 4 b s^2 h and the head's 2 b s h V (Megatron-LM
    counts); backward costs twice the forward. Times assume ``effective_tflops`` sustained
    per GPU (about 35% of a V100's fp16 peak). Activations and parameters are stored in
    ``bytes_per_value`` bytes (fp16); a block has 12 h^2 + 13 h parameters.

    Parameters
    ----------
    name : str
    layers, hidden, heads, seq_len, vocab, batch : int
    effective_tflops : float
    bytes_per_value : int

    Returns
    -------
    DNNModel
    """
    if hidden % heads:
        raise ModelError(f"{name}: hidden size {hidden} is not a multiple of {heads} heads")
    rate = effective_tflops * 1e12
    b, s, h = batch, seq_len, hidden
    act = float(b * s * h * bytes_per_value)
    g = nx.DiGraph()
    g.add_node(
        "embed",
        forward_s=0.0,
        backward_s=0.0,
        activation_bytes=act,
        parameter_bytes=float((vocab + s) * h * bytes_per_value),
    )
    prev = "embed"
    block_fwd = (24 * b * s * h * h + 4 * b * s * s * h) / rate
    for i in range(layers):
        node = f"block{i}"
        g.add_node(
            node,
            forward_s=block_fwd,
            backward_s=2 * block_fwd,
            activation_bytes=act,
            parameter_bytes=float((12 * h * h + 13 * h) * bytes_per_value),
        )
        g.add_edge(prev, node)
        prev = node
    head_fwd = 2 * b * s * h * vocab / rate
    g.add_node(
        "head",
        forward_s=head_fwd,
        backward_s=2 * head_fwd,
        activation_bytes=float(b * s * vocab * bytes_per_value),
        parameter_bytes=0.0,
    )
    g.add_edge(prev, "head")
    return _from_graph(name, g, 4, f"architecture numbers ({layers} layers, hidden {h})")


@cache
def load_model(name: str) -> DNNModel:
    """Load a bundled model by name (cached).

    Parameters
    ----------
    name : str
        One of :data:`MODELS`.

    Returns
    -------
    DNNModel

    Raises
    ------
    UnknownNameError
        For an unknown name; the message lists the known ones.

    Examples
    --------
    >>> load_model("resnet50").graph.number_of_nodes() > 100
    True
    """
    if name in _TRANSFORMERS:
        layers, hidden, heads, seq, vocab = _TRANSFORMERS[name]
        return transformer(
            name, layers=layers, hidden=hidden, heads=heads, seq_len=seq, vocab=vocab
        )
    if name not in _PIPEDREAM:
        raise UnknownNameError("model", name, MODELS)
    path = Path(str(resources.files("asrpt_opt") / "data" / "pipedream" / f"{name}.graph.txt"))
    return parse_pipedream(path.read_text(encoding="utf-8"), name=name, source=path.name)
