"""A template's skeleton — its render with a placeholder for each ``{{ }}`` value — parsed into a tree of slots.

The skeleton holds only the template's own text: each placeholder carries a per-process secret no value can forge. Its
YAML is parsed once per distinct text (up to 64 KiB, see :data:`_LONGEST_CACHED`) into a tree of literal values and a
:class:`~okt.resources.template_placement.Slot` per scalar holding placeholders; a placeholder where no value can stand
(a YAML tag, a scalar tagged ``!!int``, under a merge key ``<<``) is a :class:`okt.errors.MutationError`. The tree is
shared between renders and never changed: :func:`okt.resources.template_placement.fill` builds each render's object
from it.
"""

from __future__ import annotations

import functools
import re
import secrets
from typing import Any

import yaml

from okt import errors
from okt.resources import template_placement

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_SLOT_TAG = "tag:okt.io,2024:slot"
# A per-process secret in every placeholder: no value can forge one, so the skeleton holds only the template's text.
NONCE = secrets.token_hex(8)
PLACEHOLDER = "okt" + NONCE + "s{}x"
_PLACEHOLDER_RE = re.compile("okt" + NONCE + r"s(\d+)x")


class _FastLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Skeletons without a ``!``: the C parser (no tag anywhere, so every plain scalar is untagged)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.okt_explicit: set[int] = set()
        self.okt_slots: dict[int, template_placement.Slot] = {}


class KubectlLoader(yaml.SafeLoader):
    """PyYAML's safe loader reading plain scalars as kubectl reads them (see :func:`_construct_number`): for the YAML
    of a child read outside a render (``okt gen resource``'s manifest)."""


class _TaggedLoader(KubectlLoader):
    """Skeletons with tags: the Python parser, which tells ``!!str {{ v }}`` from an untagged plain scalar."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.okt_explicit: set[int] = set()
        self.okt_slots: dict[int, template_placement.Slot] = {}

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        tagged = self.peek_event().tag is not None  # type: ignore[no-untyped-call]
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)
        if tagged:
            self.okt_explicit.add(id(node))
        return node


def _construct_slot(loader: _FastLoader | _TaggedLoader, node: yaml.Node) -> template_placement.Slot:
    return loader.okt_slots[id(node)]


def _construct_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


def _construct_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A YAML 1.1 number, but its base-60 form (``02:30``), which kubectl reads as the text it is.

    The template's own text reads as kubectl (sigs.k8s.io/yaml, go-yaml v2) reads it: a plain scalar that looks like a
    date or a time of day is that text. PyYAML read a date, a datetime or a number of seconds instead, which no JSON
    body holds (every reconcile failed on hashing it) or the API server refuses where it wants a string."""
    if ":" in node.value:
        return _construct_text(loader, node)
    if node.tag == _INT:
        return loader.construct_yaml_int(node)
    return loader.construct_yaml_float(node)


_INT = "tag:yaml.org,2002:int"
for _loader in (_FastLoader, KubectlLoader):  # before _TaggedLoader's own, which copies KubectlLoader's table then
    _loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
    _loader.add_constructor(_INT, _construct_number)
    _loader.add_constructor("tag:yaml.org,2002:float", _construct_number)
_FastLoader.add_constructor(_SLOT_TAG, _construct_slot)
_TaggedLoader.add_constructor(_SLOT_TAG, _construct_slot)


_MERGE = "tag:yaml.org,2002:merge"
_UNDER_MERGE_KEY = (
    "template error: a value cannot stand under a YAML merge key (<<), which takes the template's own mappings "
    "(an anchored one's alias); place the value under a key of its own, or its mapping whole"
)


def _holds_placeholder(node: yaml.Node) -> bool:
    """Whether a merge key's value is, or lists, a scalar holding an expression (YAML merges mappings only)."""
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    return any(isinstance(item, yaml.ScalarNode) and NONCE in item.value for item in items)


def _mark_slots(root: yaml.Node, explicit: set[int]) -> dict[int, template_placement.Slot]:
    """Find the scalars holding placeholders, retag them as slots; refuse placeholders where no value can stand."""
    slots: dict[int, template_placement.Slot] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue  # an alias: the same node again
        seen.add(id(node))
        if NONCE in (node.tag or ""):
            raise errors.MutationError("template error: an expression cannot stand in a YAML tag")
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, item in node.value:
                if key.tag == _MERGE and _holds_placeholder(item):
                    raise errors.MutationError(_UNDER_MERGE_KEY)
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.ScalarNode) and NONCE in node.value:
            if node.tag != _STR:
                raise errors.MutationError(
                    f"template error: an expression inside a scalar tagged {node.tag}: a value is placed as a "
                    "string (or typed as YAML types an untagged plain scalar); drop the tag"
                )
            pieces = _PLACEHOLDER_RE.split(node.value)  # literal, index, literal, index, ..., literal
            parts = tuple(int(piece) if i % 2 else piece for i, piece in enumerate(pieces) if piece)
            slots[id(node)] = template_placement.Slot(parts, plain=not node.style and id(node) not in explicit)
            node.tag = _SLOT_TAG
    return slots


def _tree(value: Any) -> Any:
    """The constructed skeleton with JSON's string keys (``1: x`` has the key ``"1"``, as the API server stores it)."""
    kind = type(value)
    if kind is dict:
        return {
            key if type(key) in (str, template_placement.Slot) else template_placement.json_key(key): _tree(item)
            for key, item in value.items()
        }
    if kind is list:
        return [_tree(item) for item in value]
    return value


_LONGEST_CACHED = 64 * 1024
"""The longest skeleton whose tree is kept (a template's own text is a few kilobytes): a longer one comes from a loop
over a custom resource's long list, and its tree — tens of megabytes for a few megabytes of text — was kept for each
length of that list (20 such custom resources held 800 MB, 512 of them the process's memory many times over)."""


def tree_of(skeleton: str) -> Any:
    return parse(skeleton) if len(skeleton) <= _LONGEST_CACHED else parse.__wrapped__(skeleton)


@functools.lru_cache(maxsize=512)
def parse(skeleton: str) -> Any:
    """The tree of a skeleton (parsed once per distinct text): literal values, and a
    :class:`~okt.resources.template_placement.Slot` per scalar holding expressions."""
    loader = (_TaggedLoader if "!" in skeleton else _FastLoader)(skeleton)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        loader.okt_slots = _mark_slots(node, loader.okt_explicit)
        return _tree(loader.construct_document(node))
    except yaml.YAMLError as exc:
        raise errors.MutationError(f"the rendered template is not valid YAML: {exc}") from exc
    except RecursionError as exc:
        raise errors.MutationError("the rendered template is not valid YAML: a recursive alias") from exc
    finally:
        loader.dispose()
