"""The activation family's kernel classes: gated.py (one driver for the gated ops)."""
