"""The ``tcgen`` command line.

    tcgen list [--json]
    tcgen generate UNIT [-p name=value ...] [-o FILE] [--top NAME]
    tcgen generate --all -o DIR
    tcgen ppa UNIT [...]                      (see synth.cli)

Bad input prints one line to stderr and exits with status 2; nothing partial is written.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import files
from .params import describe_field
from .registry import all_units, get_unit

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):          # one line, exit 2 (argparse's own usage text is long)
        raise UsageError(f"{self.prog}: {message}")


def parse_params(pairs: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in pairs or []:
        if "=" not in item:
            raise UsageError(f"-p takes name=value, got {item!r}")
        k, v = item.split("=", 1)
        k = k.strip()
        if k in values:
            raise UsageError(f"parameter {k!r} given twice")
        values[k] = v.strip()
    return values


def write_atomic(path: Path, text: str):
    """Write an output file the user named: no partial files; failures are usage errors."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: folder {parent} does not exist")
    try:
        files.write_atomic(path, text, make_parents=False)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


# -- list -----------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    units = all_units()
    if args.json:
        out = []
        for u in units:
            out.append({"unit": u.name, "family": u.family, "summary": u.summary,
                        "ops_unit": u.ops_unit,
                        "params": [{"name": f.name, "type": _tname(f), "default": f.default,
                                    "allowed": describe_field(f),
                                    "doc": f.metadata.get("doc", "")}
                                   for f in u.params.fields()]})
        print(json.dumps(out, indent=2))
        return 0
    for u in units:
        print(f"{u.name}  [{u.family}]  {u.summary}")
        for f in u.params.fields():
            default = f.default if not isinstance(f.default, bool) else str(f.default).lower()
            doc = f.metadata.get("doc", "")
            print(f"    {f.name}: {_tname(f)} = {default}  ({describe_field(f)})"
                  + (f"  {doc}" if doc else ""))
    return 0


def _tname(f):
    return f.type if isinstance(f.type, str) else f.type.__name__


# -- generate ------------------------------------------------------------------------------------
def cmd_generate(args) -> int:
    from .generate import verilog
    if args.all:
        if args.unit or args.param or args.top:
            raise UsageError("generate --all takes no UNIT, -p or --top")
        if not args.output:
            raise UsageError("generate --all needs -o DIR")
        out_dir = Path(args.output)
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"cannot write {out_dir}: not a folder")
        texts = {u.name: verilog(u.name) for u in all_units()}   # all first: nothing partial
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create {out_dir}: {e.strerror}") from None
        for name, text in texts.items():
            write_atomic(out_dir / f"{name}.v", text)
        print(f"wrote {len(texts)} units to {out_dir}")
        return 0
    if not args.unit:
        raise UsageError("generate needs a UNIT (see `tcgen list`) or --all -o DIR")
    unit = get_unit(args.unit)
    params = unit.make_params(parse_params(args.param))
    text = verilog(unit.name, params, top=args.top)
    if args.output and args.output != "-":
        write_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return 0


# -- entry point --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="tcgen", description="Generate, verify and measure tensor-core arithmetic "
                                            "units.")
    sub = ap.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("list", help="every unit with its parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("generate", help="write synthesizable Verilog")
    p.add_argument("unit", nargs="?", help="unit name (see `tcgen list`)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter (repeatable)")
    p.add_argument("-o", "--output", help="output file (default stdout); a folder with --all")
    p.add_argument("--top", help="top module name (default: the unit name)")
    p.add_argument("--all", action="store_true", help="every unit at its defaults into -o DIR")
    p.set_defaults(func=cmd_generate)
    try:
        from synth.cli import add_ppa_parser
    except ImportError:
        pass
    else:
        add_ppa_parser(sub)
    return ap


def main(argv=None) -> int:
    try:
        ap = build_parser()
        args = ap.parse_args(argv)
        if not getattr(args, "func", None):
            raise UsageError("tcgen: a command is needed: list, generate" +
                             (", ppa" if "ppa" in ap._subparsers._group_actions[0].choices
                              else ""))
        return args.func(args)
    except (UsageError, ValueError) as e:
        msg = " ".join(str(e).split())
        print(f"tcgen: error: {msg}" if not msg.startswith("tcgen") else msg, file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
