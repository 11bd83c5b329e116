"""Value classes for the modules every `load` imports, without the cost of `dataclasses`.

`@record` is `@dataclass(frozen=True)` for the subset tinyllm uses: fields from annotations (base
records' fields first), defaults, `field(default=..., default_factory=..., init=..., repr=...,
compare=...)`, `__post_init__`, and the generated `__init__`, `__repr__`, `__eq__`, `__hash__` and
frozen `__setattr__` / `__delattr__`, each left alone when the class defines it; `fields` and
`replace` as in `dataclasses`. `record(frozen=False)` makes a mutable one (no hash, as a dataclass
with `eq=True`).

Why not `dataclasses`: importing it costs about 20 ms (it imports `inspect`), and each class
about 0.5 ms more (it compiles five methods when the class is made). Forty such classes were half
of the start-up of a process that loads one tokenizer. Here the methods are closures, except
`__init__`, which is compiled the first time an instance is made (as fast as a dataclass's
afterwards), so a class that a process never instantiates costs next to nothing.

>>> @record
... class Point:
...     x: int
...     y: int = 0
>>> Point(1), Point(1) == Point(1, 0), hash(Point(2)) == hash(Point(2, 0))
(Point(x=1, y=0), True, True)
>>> Point(1).x = 5
Traceback (most recent call last):
...
tinyllm._record.FrozenInstanceError: cannot assign to field 'x'
"""

from __future__ import annotations

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (as `dataclasses.FrozenInstanceError`)."""


class Field:
    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare")

    def __init__(self, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING or self.default_factory is not _MISSING


def field(*, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True) -> Field:
    """A field with options, as `dataclasses.field`."""
    return Field(default, default_factory, init, repr, compare)


def fields(class_or_instance) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order (as `dataclasses.fields`)."""
    return tuple(class_or_instance.__record_fields__.values())


def replace(obj, **changes):
    """A new record like `obj` with `changes` (as `dataclasses.replace`)."""
    values = {f.name: getattr(obj, f.name) for f in fields(obj) if f.init}
    values.update(changes)
    return type(obj)(**values)


def record(cls=None, /, *, frozen: bool = True):
    """Make `cls` a value class (see the module docs); usable bare or as `record(frozen=False)`."""
    def wrap(cls):
        return _process(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _process(cls, frozen: bool):
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "__record_fields__", {}))
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if isinstance(value, Field):
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        fields[name] = f
    seen_default = False
    for f in fields.values():
        if f.init and f.has_default:
            seen_default = True
        elif f.init and seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    cls.__record_fields__ = fields
    cls.__match_args__ = tuple(f.name for f in fields.values() if f.init)

    shown = tuple(f.name for f in fields.values() if f.repr)
    compared = tuple(f.name for f in fields.values() if f.compare)

    def __repr__(self):
        return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
        return NotImplemented

    own = cls.__dict__
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    _set(cls, "__init__", _lazy_init(cls, fields, frozen))
    _set(cls, "__repr__", __repr__)
    _set(cls, "__eq__", __eq__)
    if frozen:
        names = frozenset(fields)

        def __setattr__(self, name, value):
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self, name):
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        for method in (__setattr__, __delattr__):
            if method.__name__ in own:
                raise TypeError(f"cannot overwrite attribute {method.__name__} in class {cls.__name__}")
            _set(cls, method.__name__, method)
        if not explicit_hash:
            def __hash__(self):
                return hash(tuple(getattr(self, n) for n in compared))

            cls.__hash__ = _named(cls, __hash__)
    elif not explicit_hash:
        cls.__hash__ = None  # mutable and compared by value: unhashable, as a dataclass
    return cls


def _named(cls, function):
    function.__qualname__ = f"{cls.__qualname__}.{function.__name__}"
    return function


def _set(cls, name: str, function) -> None:
    """Give `cls` the method unless the class body defined it."""
    if name not in cls.__dict__:
        function.__name__ = name
        setattr(cls, name, _named(cls, function))


def _lazy_init(cls, fields: dict, frozen: bool):
    """An `__init__` that compiles the real one on the first call and replaces itself with it."""
    def __init__(self, *args, **kwargs):
        real = _compile_init(cls, fields, frozen)
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = real
        real(self, *args, **kwargs)

    return __init__


def _compile_init(cls, fields: dict, frozen: bool):
    scope = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params, body = [], []
    for f in fields.values():
        scope[f"_default_{f.name}"] = f.default
        scope[f"_factory_{f.name}"] = f.default_factory
        if f.init:
            if f.default_factory is not _MISSING:
                params.append(f"{f.name}=_MISSING")
                value = f"_factory_{f.name}() if {f.name} is _MISSING else {f.name}"
            else:
                params.append(f.name if f.default is _MISSING else f"{f.name}=_default_{f.name}")
                value = f.name
        elif f.default_factory is not _MISSING:
            value = f"_factory_{f.name}()"
        elif f.default is not _MISSING:
            value = f"_default_{f.name}"
        else:
            continue  # no init, no default: left unset, as a dataclass does
        body.append(f"_set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass")
    exec(source, scope)
    return _named(cls, scope["__init__"])
