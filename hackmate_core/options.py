"""UCI options: one declaration per knob, shared by the engine, evaluators, wrappers and searches.

An :class:`Option` says everything about a knob once: its UCI name, type,
range, default, help text, how the UCI integer maps to the value the code uses
(``scale``: internal value = UCI integer / scale, so ``CPuct 250`` is 2.5) and
whether changing it means building a new backend. Classes that have knobs
subclass :class:`Configurable` and list them in ``OPTIONS``; their attributes
start at the declared defaults and :meth:`Configurable.set_option` receives
values that are already parsed and scaled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Optional

KINDS = ("check", "spin", "combo", "string", "button")


class OptionError(ValueError):
    """A `setoption` the engine cannot apply (unknown name or bad value)."""


def option_settings(pairs: Iterable[str]) -> dict[str, str]:
    """Options given on a command line as ``Name=Value`` (the name may hold spaces, the value may be empty), by
    name; ValueError naming the first that is not one. The engine checks the names and values when it applies them."""
    settings = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"{pair!r} is not Name=Value")
        settings[name.strip()] = value.strip()
    return settings


@dataclass(frozen=True)
class Option:
    name: str
    kind: str  # one of KINDS
    default: Any = None  # as UCI shows it (the integer for a spin)
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    choices: tuple[str, ...] = ()
    #: internal value = UCI integer / scale (spin options only)
    scale: int = 1
    help: str = ""
    #: True when a new value means building a new evaluator/search pair.
    rebuild: bool = False
    #: The attribute of the declaring object that holds the internal value ("" for engine-level options).
    attribute: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: unknown kind {self.kind!r}")
        if self.kind == "spin" and not (self.minimum is not None and self.maximum is not None
                                        and self.minimum <= self.default <= self.maximum):
            raise ValueError(f"option {self.name}: default {self.default} outside [{self.minimum}, {self.maximum}]")

    @property
    def value(self) -> Any:
        """The default as the code uses it (scaled)."""
        return self.internal(self.default)

    def internal(self, uci_value: Any) -> Any:
        if self.kind == "spin" and self.scale != 1:
            return uci_value / self.scale
        return uci_value

    def uci_line(self) -> str:
        line = f"option name {self.name} type {self.kind}"
        if self.kind == "button":
            return line
        default = self.default
        if self.kind == "check":
            default = "true" if self.default else "false"
        elif self.kind == "string" and default in (None, ""):
            default = "<empty>"
        line += f" default {default}"
        if self.kind == "spin":
            line += f" min {self.minimum} max {self.maximum}"
        for choice in self.choices:
            line += f" var {choice}"
        return line

    def parse(self, raw: Optional[str]) -> Any:
        """The text after `value` as the internal (scaled) value, or OptionError."""
        if self.kind == "button":
            return True
        if raw is None:
            if self.kind == "string":
                return ""
            raise OptionError(f"option {self.name} needs a value")
        if self.kind == "check":
            if raw.lower() not in ("true", "false"):
                raise OptionError(f"option {self.name} takes true or false, not {raw!r}")
            return raw.lower() == "true"
        if self.kind == "spin":
            try:
                number = int(raw)
            except ValueError:
                raise OptionError(f"option {self.name} takes an integer, not {raw!r}") from None
            if not self.minimum <= number <= self.maximum:  # type: ignore[operator]
                raise OptionError(f"option {self.name} must be between {self.minimum} and {self.maximum}, "
                                  f"not {number}")
            return self.internal(number)
        if self.kind == "combo":
            for choice in self.choices:
                if choice.lower() == raw.lower():
                    return choice
            raise OptionError(f"option {self.name} must be one of {', '.join(self.choices)}, not {raw!r}")
        return "" if raw == "<empty>" else raw


class Configurable:
    """Something with UCI knobs declared once in ``OPTIONS``.

    Each option's ``attribute`` starts at the declared default. Subclasses
    with side effects (clearing a cache) extend :meth:`set_option`.
    """

    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    def __init__(self) -> None:
        for option in self.OPTIONS:
            setattr(self, option.attribute, option.value)

    def options(self) -> list[Option]:
        """The options of this object (wrappers add those of what they wrap)."""
        return list(self.OPTIONS)

    def set_option(self, name: str, value: Any) -> bool:
        """Apply one of :meth:`options` (``value`` already parsed and scaled); False if it is not ours."""
        for option in self.OPTIONS:
            if option.name == name:
                setattr(self, option.attribute, value)
                return True
        return False

    def notices(self) -> list[str]:
        """What the user should hear about the options as they apply now, though nothing failed (a setting this
        object cannot honour and what it does instead); the engine prints them as `info string`."""
        return []

    def fallbacks(self) -> list[str]:
        """Settings this object cannot honour as asked, and what it does instead, where that is a failure (a GPU
        asked for and the CPU used): the engine tells them as fallbacks (hackmate_core.fallback)."""
        return []
