"""The sampling family's ops, one file each (found by name: <snake op without Fwd>.py)."""
