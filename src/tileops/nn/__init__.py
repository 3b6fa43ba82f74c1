"""tileops.nn: modules over the ops, for models.

    RMSNorm, LayerNorm, FusedAddRMSNorm, FusedAddLayerNorm, GemmaRMSNorm   (norm.py)
    SiluAndMul, GeluAndMul                                                  (activation.py)
    RotaryEmbedding                                                         (positional.py)
    Embedding                                                               (embedding.py)
    PagedAttention (KV cache write + paged decode attention)               (attention.py)
    LlamaDecoderLayer, TensorParallelLlamaDecoderLayer                      (llama.py)

Each module owns its parameters under torch's and Hugging Face's state_dict names, follows
`.to()` and device moves like any module, and calls an op instance interned by its params
(`instance`, `interned`): every module and functional call with equal params shares one,
so N equal layers compile once, whether each layer is compiled (`layer.compile()`) or the
whole model. The Hugging Face patcher (`tileops.patch`, `patch_llama`, `patch_qwen2`,
`unpatch`) lives in hf.py."""
from ._intern import instance, interned
from .activation import GeluAndMul, SiluAndMul
from .attention import PagedAttention
from .embedding import Embedding
from .norm import FusedAddLayerNorm, FusedAddRMSNorm, GemmaRMSNorm, LayerNorm, RMSNorm
from .llama import LlamaDecoderLayer, TensorParallelLlamaDecoderLayer
from .positional import RotaryEmbedding

__all__ = ["RMSNorm", "LayerNorm", "FusedAddRMSNorm", "FusedAddLayerNorm", "GemmaRMSNorm", "SiluAndMul",
           "GeluAndMul", "RotaryEmbedding", "Embedding", "PagedAttention", "LlamaDecoderLayer",
           "TensorParallelLlamaDecoderLayer", "instance", "interned"]
