"""python -m tileops.manifest validate"""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["validate"]:
        print("usage: python -m tileops.manifest validate", file=sys.stderr)
        return 2
    from .loader import package_entries
    from .validate import validate
    errs = validate()
    implemented = [n for n, e in package_entries().items() if e.status == "implemented"]
    for e in errs:
        print("✗", e)
    if errs:
        print(f"manifest: {len(errs)} problem(s)")
        return 1
    print(f"✓ manifest: {len(implemented)} implemented entries agree with their op classes "
          f"({', '.join(implemented)}); {len(package_entries()) - len(implemented)} spec-only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
