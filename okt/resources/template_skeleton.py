"""A template's skeleton — its render with a placeholder for each ``{{ }}`` value — parsed into a tree of slots.

The skeleton holds only the template's own text: each placeholder carries a per-process secret no value can forge. Its
YAML is parsed once per distinct text (up to 64 KiB, see :data:`_LONGEST_CACHED`) into a tree of literal values and a
:class:`~okt.resources.template_placement.Slot` per scalar holding placeholders; a placeholder where no value can stand
(a YAML tag, a scalar tagged ``!!int``, under a merge key ``<<``) is a :class:`okt.errors.MutationError`. The tree is
shared between renders and never changed: :func:`okt.resources.template_placement.fill` builds each render's object
from it.
"""

from __future__ import annotations

import decimal
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


class _KubectlScalars:
    """Plain scalars typed as kubectl (sigs.k8s.io/yaml, go-yaml v2) types them, for the loaders below.

    PyYAML follows YAML 1.1's patterns, go-yaml its own rules: ``0o17``, ``1e3``, ``1.5e3``, ``+0o17``, ``08``, ``y``
    and ``n`` were text to PyYAML and a number or a boolean to kubectl, ``2024-05-01`` and ``12:30`` a date and a number
    of seconds to PyYAML and text to kubectl. A manifest that ``kubectl apply`` takes means the same to okt."""

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _plain_tag(value)
        return super().resolve(kind, value, implicit)  # type: ignore[misc,no-any-return]


def _plain_tag(text: str) -> str:
    """The tag go-yaml v2 resolves an untagged plain scalar to (its ``resolve``): the words of its table, else for a
    scalar starting with a digit or a sign a Go integer (``0x``, ``0o``, ``0b`` or a leading ``0`` for octal, every
    ``_`` dropped), else a decimal float; else text. A date or a time of day is text, as sigs.k8s.io/yaml writes it."""
    word = _WORDS.get(text)
    if word is not None:
        return word[0]
    first = text[:1]
    if first == ".":
        return _FLOAT if _DOT_FLOAT.match(text) else _STR
    if first.isdigit() or first in "+-":
        digits = text.replace("_", "")
        if _GO_INT.match(digits):
            return _INT
        if _DECIMAL_FLOAT.match(digits):
            return _FLOAT
    return _STR


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), (_BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), (_BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (_NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (_FLOAT, None)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (_FLOAT, None)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (_FLOAT, None)),
    "<<": (_MERGE, None),
}
"""go-yaml v2's table of plain scalars: its booleans (``y`` and ``n`` too), nulls, infinities and NaNs, merge key."""
_GO_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9][0-9]*|0)\Z")
"""Go's ``strconv.ParseInt(text, 0, 64)``: a leading ``0`` alone says octal (``08`` is no integer; it is a float)."""
_DECIMAL_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
"""go-yaml v2's ``yamlStyleFloat``: ``1e3``, ``1.``, ``.5``, ``08``."""
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")
"""What Go's ``strconv.ParseFloat`` reads of a scalar starting with a dot (go-yaml drops no ``_`` there)."""
_LARGEST_EXACT = 1e21
"""Go's JSON writes a float of a smaller magnitude without exponent: an integral one (``1e3``, ``1.0``) is the
integer it writes, ``1000``, which the API server reads as an integer."""


class _FastLoader(_KubectlScalars, _BaseLoader):  # type: ignore[valid-type,misc]
    """Skeletons without a ``!``: the C parser (no tag anywhere, so every plain scalar is untagged)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.okt_explicit: set[int] = set()
        self.okt_slots: dict[int, template_placement.Slot] = {}


class KubectlLoader(_KubectlScalars, yaml.SafeLoader):
    """PyYAML's safe loader reading plain scalars as kubectl reads them (see :class:`_KubectlScalars`): for the YAML
    of a child read outside a render (``okt gen resource``'s manifest)."""


class KubectlDumper(_KubectlScalars, yaml.SafeDumper):
    """PyYAML's safe dumper writing plain only the strings kubectl reads back as strings: ``"1e3"``, ``"y"`` and
    ``"0o17"`` are quoted (PyYAML wrote them plain, as its own patterns read them as text, and kubectl read a number
    or a boolean)."""


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


def _construct_word(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A boolean or a null of go-yaml's table (``!!bool y`` too); PyYAML's own reading of any other text."""
    word = _WORDS.get(node.value)
    if word is None or word[0] != node.tag:
        return loader.construct_yaml_null(node) if node.tag == _NULL else loader.construct_yaml_bool(node)
    return word[1]


def _construct_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """The number kubectl sends for the scalar: a Go integer (``0o17``, ``017``, ``0x1F``, ``1_000``), or a float,
    integral ones written as the integer Go's JSON writes (``1e3``, ``1.0``: ``1000``, ``1``).

    A NaN or an infinity (``.inf``) is refused, as kubectl refuses it: no JSON body holds it."""
    text = node.value
    if _WORDS.get(text, ("",))[0] == _FLOAT:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"found {text}, a number JSON cannot write (kubectl refuses it too): quote it for the text",
            node.start_mark,
        )
    digits = text.replace("_", "")
    if _GO_INT.match(digits):
        unsigned = digits.lstrip("+-")
        octal = unsigned[:1] == "0" and unsigned[1:2].isdigit()  # Go's 017, Python's 0o17
        integer = int("0o" + unsigned[1:] if octal else unsigned, 0)
        integer = -integer if digits[0] == "-" else integer
        if -(2**63) <= integer < 2**63:  # else a float, as kubectl's object reads it
            return integer
    if ":" in text or not (_DECIMAL_FLOAT.match(digits) or _DOT_FLOAT.match(text)):
        return loader.construct_scalar(node)  # an explicit !!int or !!float over text go-yaml reads no number in
    number = float(digits)
    if number.is_integer() and abs(number) < _LARGEST_EXACT:
        return int(decimal.Decimal(repr(number)))  # its shortest digits, as Go writes them: 1e3 is 1000
    return number


for _loader in (_FastLoader, KubectlLoader):  # before _TaggedLoader's own, which copies KubectlLoader's table then
    _loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
    _loader.add_constructor(_INT, _construct_number)
    _loader.add_constructor(_FLOAT, _construct_number)
    _loader.add_constructor(_BOOL, _construct_word)
    _loader.add_constructor(_NULL, _construct_word)
_FastLoader.add_constructor(_SLOT_TAG, _construct_slot)
_TaggedLoader.add_constructor(_SLOT_TAG, _construct_slot)


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
