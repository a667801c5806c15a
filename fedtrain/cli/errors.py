"""The ``fedtrain`` command's errors: at most three lines on stderr, the error first, then where the flags are
listed; no usage block (:func:`fail`, :class:`ErrorParser`)."""
from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

__all__ = ["fail", "ErrorParser"]


def _short_lines(message: str, limit: int = 3) -> list[str]:
    """``message`` in at most ``limit`` lines: indented continuation lines (a list of paths, say) joined to the
    line they continue, then whatever is left past the limit joined to the last line."""
    lines: list[str] = []
    for line in str(message).splitlines():
        if not line.strip():
            continue
        if lines and line[:1].isspace():
            lines[-1] += (" " if lines[-1].endswith(":") else ", ") + line.strip()
        else:
            lines.append(line.strip())
    if len(lines) > limit:
        lines = lines[:limit - 1] + [" ".join(lines[limit - 1:])]
    return lines or ["(no message)"]


def fail(prog: str, message: Any, status: int = 2, *, hint: str | None = None) -> "NoReturn":
    """Print ``prog: error: message`` (at most 3 lines, the error first, no usage block) and exit with ``status``.

    ``hint``: a last line (e.g. where the flags are listed) when the message leaves room for it."""
    lines = _short_lines(str(message), 2 if hint else 3)
    lines[0] = f"{prog}: error: {lines[0]}"
    if hint:
        lines.append(hint)
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    raise SystemExit(status)


class ErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are short: the error first, then where the flags are listed; no usage block.

    ``add_subparsers`` makes every subcommand's parser of this class too (argparse's default ``parser_class`` is the
    parent's class), so the subcommands added with :func:`register_command` report the same way."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        fail(self.prog, message, 2, hint=f"({self.prog} --help lists the arguments and their valid values)")
