"""The shapes of model, by name: the one place that names them.

Each shape is a class in its own module (forecaster/shapes/base.py says what a shape is): `recurrent` (Darts'
RNNModel), `direct` (Darts' BlockRNNModel) and `hybrid` (Smyl's ES-RNN). A shape's module is imported the first time a
configuration of it is checked: naming them loads no torch. A new shape is a module with a `SHAPE` and a line in
`BUILT_IN`, or, from code of your own, `register(MyShape())` before its first configuration is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forecaster.shapes.base import Shape

BUILT_IN = {
    "recurrent": "forecaster.shapes.recurrent",
    "direct": "forecaster.shapes.direct",
    "hybrid": "forecaster.shapes.hybrid",
}
"""Each built-in shape's module, whose `SHAPE` is the shape."""
_LOADED: dict[str, Shape] = {}


def shape_names() -> tuple[str, ...]:
    """The built-in shapes' names, then those registered."""
    return (*BUILT_IN, *(name for name in _LOADED if name not in BUILT_IN))


def shape_of(name: str) -> Shape:
    """The shape of model of that name.

    Args:
        name: A built-in shape (recurrent, direct, hybrid) or one registered in this process.

    Returns:
        The shape, loading its module the first time.

    Raises:
        KeyError: No shape of that name; the message names those there are."""
    if name not in _LOADED:
        if name not in BUILT_IN:
            raise KeyError(f"no shape {name!r}; the shapes are: {', '.join(shape_names())}")
        _LOADED[name] = importlib.import_module(BUILT_IN[name]).SHAPE
    return _LOADED[name]


def registered() -> tuple[Shape, ...]:
    """The shapes `register` made known in this process, beside the built-in ones."""
    return tuple(shape for name, shape in _LOADED.items() if name not in BUILT_IN)


def register(shape: Shape) -> Shape:
    """Make a shape known by its name in this process: configurations of it can then be made, trained, saved and loaded.
    A sweep started in this process registers it in Ray's workers too (its trials and tasks take it by value).

    Args:
        shape: An instance of a subclass of Shape (forecaster/shapes/base.py), with a `name` of its own.

    Returns:
        `shape`.

    Raises:
        ValueError: It has no name, or a built-in shape's."""
    if not shape.name or shape.name in BUILT_IN:
        raise ValueError(f"a shape needs a name of its own, not {shape.name!r}")
    _LOADED[shape.name] = shape
    return shape


def unregister(name: str) -> None:
    """Forget a shape `register` made known (a test's toy, a notebook's experiment)."""
    if name not in BUILT_IN:
        _LOADED.pop(name, None)
