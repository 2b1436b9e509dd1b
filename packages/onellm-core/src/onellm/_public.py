"""Public paths for public classes: `publish("onellm", Message, Usage)` makes reprs, tracebacks and generated docs
say `onellm.Message` instead of `onellm.messages._message.Message`, the way httpx keeps its own classes.

`__module__` is also where `typing.get_type_hints` and msgspec look up the names in a class's string annotations
(`from __future__ import annotations`). So before it moves a class, `publish` evaluates the annotations of the class
itself in the module that defined it, and keeps the evaluated types: a type checker, msgspec's decoders and the
schema compiler then read the same types as before. An annotation that cannot be evaluated there (a name imported only
for type checkers) stays text, exactly as unresolvable as it was. Pickling finds the class by its public path, which
resolves to the same object.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["publish"]


def publish(public_module: str, *classes: type) -> None:
    """Give each class `public_module` as its `__module__`, its own string annotations evaluated first.

    Args:
        public_module: The dotted path users import the classes from, for example `onellm` or `onellm.catalog`.
        *classes: The classes to move; each is left in its defining module too.
    """
    for cls in classes:
        if cls.__module__ == public_module:
            continue
        _freeze_annotations(cls)
        cls.__module__ = public_module


def _freeze_annotations(cls: type) -> None:
    annotations = dict(vars(cls).get("__annotations__") or {})
    if not any(isinstance(value, str) for value in annotations.values()):
        return
    module = sys.modules.get(cls.__module__)
    namespace: dict[str, Any] = dict(vars(module)) if module is not None else {}
    local = dict(vars(cls))
    for name, value in annotations.items():
        if isinstance(value, str):
            try:
                annotations[name] = eval(value, namespace, local)
            except Exception:
                continue  # a name only type checkers see stays text: as unresolvable as it was
    cls.__annotations__ = annotations
