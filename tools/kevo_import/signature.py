"""Python-style argument binding for the shape rules: "input, dim=None, keepdim=False" and friends."""

from __future__ import annotations

import ast

from .shapecheck import Untranslatable


class Signature:
    def __init__(self, text: str):
        fn = ast.parse(f"def f({text}): pass").body[0].args
        self.positional = [a.arg for a in fn.posonlyargs + fn.args]
        defaults = [ast.literal_eval(d) for d in fn.defaults]
        self.defaults = dict(zip(self.positional[len(self.positional) - len(defaults):], defaults))
        self.vararg = fn.vararg.arg if fn.vararg else None
        self.kwonly = [a.arg for a in fn.kwonlyargs]
        self.varkw = fn.kwarg.arg if fn.kwarg else None
        for a, d in zip(fn.kwonlyargs, fn.kw_defaults):
            if d is not None:
                self.defaults[a.arg] = ast.literal_eval(d)
        self.required = [p for p in self.positional + self.kwonly if p not in self.defaults]

    def bind(self, args: list, kwargs: dict, what: str) -> "Bound":
        out = Bound()
        if len(args) > len(self.positional) and not self.vararg:
            raise Untranslatable(f"{what}() takes at most {len(self.positional)} positional arguments, got {len(args)}")
        for name, v in zip(self.positional, args):
            out[name] = v
        if self.vararg:
            out[self.vararg] = list(args[len(self.positional):])
        if self.varkw:
            out[self.varkw] = {}
        for k, v in kwargs.items():
            if self.varkw and k not in out and k not in self.positional and k not in self.kwonly:
                out[self.varkw][k] = v
                continue
            if k in out or (k not in self.positional and k not in self.kwonly):
                raise Untranslatable(f"{what}() got an unexpected or repeated keyword '{k}'")
            out[k] = v
        for name in self.positional + self.kwonly:
            if name not in out:
                if name not in self.defaults:
                    raise Untranslatable(f"{what}() is missing its argument '{name}'")
                out[name] = self.defaults[name]
        return out


class Bound(dict):
    """Bound arguments, readable as attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
