"""UCI options: declaration, `option` lines and validation of `setoption` values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class OptionError(ValueError):
    """A `setoption` the engine cannot apply (unknown name or bad value)."""


@dataclass
class UciOption:
    name: str
    kind: str  # check | spin | combo | string | button
    default: Any = None
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    choices: list[str] = field(default_factory=list)

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
        """Turn the text after `value` into a typed value, or raise OptionError."""
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
            return number
        if self.kind == "combo":
            for choice in self.choices:
                if choice.lower() == raw.lower():
                    return choice
            raise OptionError(f"option {self.name} must be one of {', '.join(self.choices)}, not {raw!r}")
        return "" if raw == "<empty>" else raw


class OptionSet:
    """Options by case-insensitive name, with their current values."""

    def __init__(self, options: list[UciOption]) -> None:
        self._options = {o.name.lower(): o for o in options}
        self.values: dict[str, Any] = {o.name: o.default for o in options}

    def __iter__(self):
        return iter(self._options.values())

    def get(self, name: str) -> Any:
        return self.values[self._options[name.lower()].name]

    def find(self, name: str) -> Optional[UciOption]:
        return self._options.get(name.lower())

    def set(self, name: str, raw: Optional[str]) -> tuple[str, Any]:
        """Validate and store; returns the canonical name and the typed value."""
        option = self.find(name)
        if option is None:
            raise OptionError(f"unknown option {name!r}")
        value = option.parse(raw)
        self.values[option.name] = value
        return option.name, value
