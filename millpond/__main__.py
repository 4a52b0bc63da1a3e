"""The ``millpond`` command line."""

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["--version"], ["version"]):
        from millpond import __version__

        sys.stdout.write(f"millpond {__version__}\n")
        return 0
    sys.stderr.write(
        "millpond: no broker yet; this build has the wire layer only "
        "(see README.md for what is supported).\n"
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
