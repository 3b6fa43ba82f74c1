"""Every implemented op, driven by its manifest entry alone (tests/driver.py): nothing here
is written per op. For each op x target x dtype x effect branch, every workload test case
(0 rows included), each optional input present and absent, contiguous and strided inputs
(and out), through the eager fast path and the operator: numerics against the reference in
float64 and in the op's dtype, what the branch writes and returns, and the outputs' shape,
dtype, device and contiguity from the manifest. Once per op x target x branch, with one
small case: torch.library.opcheck, a cold torch.compile(fullgraph=True) holding exactly one
tileops node, and a backward that raises naming the op.

A target that does not serve an op is a skip that says so."""

import driver

DEVICE = "cpu"


test_op, test_opcheck, test_compile, test_backward_raises_naming_the_op = driver.tests_for(DEVICE)
