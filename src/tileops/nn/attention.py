"""Attention modules: the place for paged attention with its KV-cache write (issue 15, item
1), once the attention ops land (other work in progress). A module here follows the rest
of tileops.nn: it subclasses `_base.OpModule`, owns its parameters under Hugging Face's
names, calls interned op instances (`_intern.lookup`), and `tileops.nn.hf` swaps it into
LlamaAttention / Qwen2Attention where the patcher today swaps only the rotary application
(hf.py: `_rope_attention_forward`)."""
