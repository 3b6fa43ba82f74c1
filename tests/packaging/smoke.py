"""Runs the README's example (the ```python block under "## Example", as a user copies it)
with whatever tileops the interpreter imports, and says which one that was. Used by
check_dist.sh (the wheel in a fresh venv without a compiler) and check_clang.sh (the
extension built by clang): `python smoke.py README.md [--from FOLDER]` fails unless
tileops was imported from FOLDER (default: the interpreter's own prefix)."""
import argparse
import os
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("readme")
p.add_argument("--from", dest="origin", default=sys.prefix)
a = p.parse_args()

with open(a.readme, encoding="utf-8") as f:
    m = re.search(r"^## Example\n\n```python\n(.*?)^```", f.read(), re.S | re.M)
if m is None:
    sys.exit(f"{a.readme}: no ```python block under '## Example'")
code = m.group(1)
ns = {"__name__": "__readme__"}
exec(compile(code, f"{a.readme} (## Example)", "exec"), ns)

import tileops  # noqa: E402  (the example imported it)
from tileops import _C  # noqa: E402

where = os.path.realpath(tileops.__file__)
origin = os.path.realpath(a.origin)
print(f"README example ran: tileops {tileops.__version__} from {os.path.dirname(where)}, "
      f"_C {os.path.basename(_C.__file__)}, SIMD {_C.cpu_simd_level()}")
if os.path.commonpath([where, origin]) != origin:
    sys.exit(f"tileops was imported from {where}, not from {origin}")
