"""Every YAML read in the workbench goes through :func:`load_yaml`: a safe loader that
bounds the document's expanded size before anything is built from it.

YAML aliases share one node, so a 600-byte file of nested aliases (``&a [x, x]`` then
``&b [*a, *a]`` ...) parses into a small graph that stands for a billion values; whatever
walks the result (validation, a copy, a dump) then runs for minutes and fills memory. The
loaders here count the expanded size of the composed node graph (each node once, an alias
as the size of what it names) and refuse a document past :data:`MAX_YAML_VALUES` before
constructing it.
"""

from __future__ import annotations

import yaml

from sga_core.params import ConfigError

MAX_YAML_VALUES = 100_000  # scalars, lists and mappings once aliases are expanded


class YAMLTooLarge(ConfigError, yaml.YAMLError):
    """A YAML document whose aliases expand past :data:`MAX_YAML_VALUES` values."""


def expanded_size(node: yaml.Node, limit: int = MAX_YAML_VALUES) -> int:
    """The number of values ``node`` stands for with aliases expanded, computed over the
    shared graph (each node visited once) and stopping as soon as it passes ``limit``."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        if id(current) in sizes:
            continue
        if isinstance(current, yaml.ScalarNode):
            sizes[id(current)] = 1
            continue
        children = (current.value if isinstance(current, yaml.SequenceNode)
                    else [n for pair in current.value for n in pair])
        if not children_done:
            stack.append((current, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        total = 1
        for child in children:
            total += sizes.get(id(child), 0)
            if total > limit:
                return total
        sizes[id(current)] = total
    return sizes[id(node)]


def _bounded(base: type) -> type:
    class Bounded(base):
        limit = MAX_YAML_VALUES
        source = "YAML"

        def construct_document(self, node):
            if expanded_size(node, self.limit) > self.limit:
                raise YAMLTooLarge(
                    f"{self.source}: the YAML expands to more than {self.limit:,} values "
                    "(aliases '*name' repeat what '&name' marks): write the values out")
            return super().construct_document(node)

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{base.__name__}"
    return Bounded


BoundedSafeLoader = _bounded(yaml.SafeLoader)
BoundedCSafeLoader = _bounded(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_yaml(text: str | bytes, source: str = "YAML", *, fast: bool = False):
    """``yaml.safe_load`` with the expanded size bounded; ``source`` (a file's base name)
    starts the :class:`YAMLTooLarge` message. ``fast`` uses libyaml's parser when present."""
    loader = (BoundedCSafeLoader if fast else BoundedSafeLoader)(text)
    loader.source = source
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
