# Strategy: when a tensor that an index lists, and no shard holds, is
# supplied by a tie, so that a loader still loads the checkpoint.  The
# evidence is data: the known ties (below), the model's config.json beside
# the index, and {dropped: kept} notes that writers leave in metadata.  A
# vouched tensor is a warning (index-tensor-tied, ST513), never silence: the
# finding is always reported.  Nothing here does I/O.
#
# The known ties are the literal (tied, source) entries of the
# `_tied_weights_keys` tables of transformers 5.24.0's models (the regular-
# expression entries left out).  A key may name a module ("bbox_embed"), whose
# tensors tie to the same tensors under the other name.  transformers 5 ties
# symmetrically while loading ("if source is missing but target exists, swap
# them"), so each pair is looked up both ways; and it applies the tables of
# nested models under their prefix (BartForConditionalGeneration's
# "model.encoder.embed_tokens.weight" is BartModel's
# "encoder.embed_tokens.weight"), so a key may sit under a short prefix.
# transformers ties nothing when the config says tie_word_embeddings: false.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Container, Mapping, Sequence

__all__ = ["INPUT_EMBEDDINGS", "KNOWN_TIES", "OUTPUT_HEADS", "config_flag", "known_partner", "tie_evidence"]

KNOWN_TIES: Final[tuple[tuple[str, str], ...]] = (
    ("backbone_model.embed_tokens.embed_audio_tokens.weight", "depth_decoder.model.embed_tokens.weight"),
    ("bbox_embed", "model.decoder.bbox_embed"),
    ("class_embed", "model.decoder.class_embed"),
    ("cls.predictions.decoder.bias", "cls.predictions.bias"),
    ("cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "deberta.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "ernie.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "fnet.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "layoutlm.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "lxmert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "mobilebert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "mra.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "nomic_bert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "nystromformer.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "roc_bert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "roformer.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "tapas.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "transformer.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "visual_bert.embeddings.word_embeddings.weight"),
    ("cls.predictions.decoder.weight", "yoso.embeddings.word_embeddings.weight"),
    ("codec_head", "model.codec_embedding.weight"),
    ("ctc_head.bias", "encoder.out.bias"),
    ("ctc_head.weight", "encoder.out.weight"),
    ("decoder.bbox_embed", "enc_bbox_head"),
    ("decoder.class_embed", "enc_score_head"),
    ("decoder.embed_tokens.eoi_embedding", "encoder.text_model.embed_tokens.eoi_embedding"),
    ("decoder.embed_tokens.weight", "encoder.text_model.embed_tokens.weight"),
    ("decoder.embed_tokens.weight", "shared.weight"),
    ("decoder.output_projection.weight", "decoder.embed_tokens.weight"),
    (
        "decoder.relative_bias.biases.0.relative_attention_bias.weight",
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    ),
    ("decoder.weight", "model.embeddings.tok_embeddings.weight"),
    ("decoder.word_embeddings.weight", "word_embeddings.weight"),
    ("embed_out.weight", "gpt_neox_japanese.embed_in.weight"),
    ("encoder.embed_patches.proj.bias", "patch_embed.proj.bias"),
    ("encoder.embed_patches.proj.weight", "patch_embed.proj.weight"),
    ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"),
    ("encoder.embed_tokens.weight", "shared.weight"),
    ("encoder.language_model.embed_tokens.weight", "decoder.embed_tokens.weight"),
    ("encoder.language_model.norm.weight", "decoder.norm.weight"),
    (
        "encoder.relative_bias.biases.0.relative_attention_bias.weight",
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    ),
    ("encoder.word_embeddings.weight", "word_embeddings.weight"),
    ("entity_predictions.decoder.weight", "luke.entity_embeddings.entity_embeddings.weight"),
    ("generator_lm_head.weight", "convbert.embeddings.word_embeddings.weight"),
    ("generator_lm_head.weight", "electra.embeddings.word_embeddings.weight"),
    ("head.decoder.weight", "model.embed_tokens.weight"),
    ("head.weight", "rwkv.embeddings.weight"),
    ("lm_head.bias", "lm_head.decoder.bias"),
    ("lm_head.decoder.bias", "lm_head.bias"),
    ("lm_head.decoder.weight", "bert.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "data2vec_text.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "esm.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "gte.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "ibert.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "longformer.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "mpnet.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"),
    ("lm_head.decoder.weight", "roberta_prelayernorm.embeddings.word_embeddings.weight"),
    ("lm_head.out_proj.weight", "model.decoder.embed_tokens.weight"),
    ("lm_head.out_proj.weight", "model.encoder.text_model.embed_tokens.weight"),
    ("lm_head.weight", "backbone.embeddings.weight"),
    ("lm_head.weight", "embed_tokens.weight"),
    ("lm_head.weight", "funnel.embeddings.word_embeddings.weight"),
    ("lm_head.weight", "gpt_neox.embed_in.weight"),
    ("lm_head.weight", "led.shared.weight"),
    ("lm_head.weight", "model.decoder.embed_tokens.weight"),
    ("lm_head.weight", "model.embed_tokens.embed_tokens.weight"),
    ("lm_head.weight", "model.embed_tokens.weight"),
    ("lm_head.weight", "model.embed_tokens.word_embeddings.weight"),
    ("lm_head.weight", "model.language_model.embed_tokens.weight"),
    ("lm_head.weight", "model.language_model.shared.weight"),
    ("lm_head.weight", "model.shared.weight"),
    ("lm_head.weight", "model.text_model.embed_tokens.weight"),
    ("lm_head.weight", "model.text_model.embeddings.tok_embeddings.weight"),
    ("lm_head.weight", "prophetnet.word_embeddings.weight"),
    ("lm_head.weight", "shared.weight"),
    ("lm_head.weight", "transformer.tokens_embed.weight"),
    ("lm_head.weight", "transformer.w.weight"),
    ("lm_head.weight", "transformer.word_embeddings.weight"),
    ("lm_head.weight", "transformer.wte.weight"),
    ("lm_loss.weight", "transformer.word_embedding.weight"),
    ("mim_head.bias", "mim_head.decoder.bias"),
    ("mlm_head.bias", "mlm_head.decoder.bias"),
    ("mlm_score.decoder.weight", "bridgetower.text_model.embeddings.word_embeddings.weight"),
    ("mlm_score.decoder.weight", "vilt.embeddings.text_embeddings.word_embeddings.weight"),
    ("mmm_image_head.bias", "mmm_image_head.decoder.bias"),
    ("mmm_text_head.bias", "mmm_text_head.decoder.bias"),
    ("model.decoder.bbox_embed", "bbox_embed"),
    ("model.decoder.bbox_embed", "bbox_predictor"),
    ("model.decoder.class_embed", "class_embed"),
    ("model.local_encoder.embed_tokens.weight", "lm_head.weight"),
    ("output.weight", "git.embeddings.word_embeddings.weight"),
    ("output_projection.weight", "biogpt.embed_tokens.weight"),
    ("output_projection.weight", "model.decoder.embed_tokens.weight"),
    ("pred_layer.proj.weight", "transformer.embeddings.weight"),
    ("predictions.decoder.bias", "predictions.bias"),
    ("predictions.decoder.weight", "albert.embeddings.word_embeddings.weight"),
    ("proj_out.weight", "model.decoder.embed_tokens.weight"),
    ("prompt_encoder.shared_embedding.positional_embedding", "shared_image_embedding.positional_embedding"),
    ("prophetnet.decoder.word_embeddings.weight", "prophetnet.word_embeddings.weight"),
    ("text_decoder.cls.predictions.decoder.bias", "text_decoder.cls.predictions.bias"),
    ("text_decoder.cls.predictions.decoder.weight", "text_decoder.bert.embeddings.word_embeddings.weight"),
    ("text_decoder.embed_tokens.weight", "shared.weight"),
    ("text_decoder_postnet.lm_head.weight", "speecht5.decoder.prenet.embed_tokens.weight"),
    ("text_encoder.embed_tokens.weight", "shared.weight"),
    ("text_model.lm_head.weight", "text_model.model.embed_tokens.weight"),
    ("transformer.tokens_embed.weight", "lm_head.weight"),
    ("unembedding_projection.weight", "model.embed_tokens.embedding_projection.weight"),
    ("vocab_projector.weight", "distilbert.embeddings.word_embeddings.weight"),
)

# With tie_word_embeddings: true in config.json, an output head (the name's
# last components) is tied to an input embedding under the same prefix, for
# architectures the table above does not list.
OUTPUT_HEADS: Final = (
    "lm_head.weight",
    "lm_head.decoder.weight",
    "predictions.decoder.weight",
    "generator_lm_head.weight",
    "proj_out.weight",
    "embed_out.weight",
    "output_projection.weight",
    "lm_loss.weight",
    "vocab_projector.weight",
)
INPUT_EMBEDDINGS: Final = (
    "embed_tokens.weight",
    "embeddings.word_embeddings.weight",
    "word_embeddings.weight",
    "word_embedding.weight",
    "wte.weight",
    "embed_in.weight",
    "tok_embeddings.weight",
    "tokens_embed.weight",
    "embeddings.weight",
    "shared.weight",
)
_MAX_PREFIX: Final = 3  # path components a nested model's prefix may have
_MAX_KEY: Final = 8  # path components of the longest key above


def _both_ways(pairs: tuple[tuple[str, str], ...]) -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for tied, source in pairs:
        table.setdefault(tied, []).append(source)
        table.setdefault(source, []).append(tied)
    return {key: tuple(dict.fromkeys(values)) for key, values in table.items()}


_TIES: Final = _both_ways(KNOWN_TIES)


def known_partner(name: str, held: Container[str]) -> str | None:
    """The held tensor that a known tie supplies ``name`` from, or None.

    At most (_MAX_PREFIX + 1) * _MAX_KEY table lookups, whatever the name.
    """
    dots = [-1]
    at = name.find(".")
    while at >= 0 and len(dots) <= _MAX_PREFIX + _MAX_KEY:
        dots.append(at)
        at = name.find(".", at + 1)
    dots.append(len(name))
    for a in range(min(_MAX_PREFIX + 1, len(dots) - 1)):
        start = dots[a] + 1
        for b in range(a + 1, min(a + 1 + _MAX_KEY, len(dots))):
            rest = name[dots[b] :]
            for other in _TIES.get(name[start : dots[b]], ()):
                candidate = name[:start] + other + rest
                if candidate != name and candidate in held:
                    return candidate
    return None


def config_flag(config: Mapping[str, Any] | None, key: str) -> bool | None:
    """A boolean setting of config.json, at the top level or in its
    ``text_config`` (multimodal models); None when it is not set."""
    if config is None:
        return None
    value = config.get(key)
    if isinstance(value, bool):
        return value
    text = config.get("text_config")
    if isinstance(text, dict) and isinstance(text.get(key), bool):
        return bool(text[key])
    return None


def _config_partner(name: str, held: Container[str], config: Mapping[str, Any]) -> str | None:
    if config_flag(config, "tie_word_embeddings") is True:
        for head in OUTPUT_HEADS:
            if name == head or name.endswith("." + head):
                prefix = name[: len(name) - len(head)]
                for embedding in INPUT_EMBEDDINGS:
                    for candidate in (prefix + embedding, prefix + "model." + embedding):
                        if candidate in held:
                            return candidate
    # transformers 4.x EncoderDecoderModel with tie_encoder_decoder: the
    # decoder's base model ("decoder.<prefix>.X") takes the encoder's "encoder.X".
    if config.get("tie_encoder_decoder") is True and name.startswith("decoder."):
        rest = name[len("decoder.") :]
        for candidate in ("encoder." + rest, "encoder." + rest.partition(".")[2]):
            if candidate != "encoder." and candidate in held:
                return candidate
    return None


def tie_evidence(
    name: str,
    held: Container[str],
    *,
    config: Mapping[str, Any] | None,
    notes: Sequence[Mapping[str, Any]],
) -> tuple[str | None, str | None]:
    """(why a tie supplies ``name``, why a tie would but does not), at most one set.

    ``held`` holds the names the shards hold; ``notes`` are metadata objects
    that may record ``{name: kept}`` (the listed shard's, then the index's).
    """
    if config_flag(config, "tie_word_embeddings") is False:
        if known_partner(name, held) is not None or _note(name, held, notes) is not None:
            return None, "config.json sets tie_word_embeddings: false, so transformers ties nothing"
        return None, None
    kept = _note(name, held, notes)
    if kept is not None:
        return f"the metadata records it as a copy of {kept!r}", None
    partner = known_partner(name, held)
    if partner is not None:
        return f"transformers ties it to {partner!r}", None
    if config is not None:
        partner = _config_partner(name, held, config)
        if partner is not None:
            return f"config.json ties it to {partner!r}", None
    return None, None


def _note(name: str, held: Container[str], notes: Sequence[Mapping[str, Any]]) -> str | None:
    for metadata in notes:
        kept = metadata.get(name)
        if isinstance(kept, str) and kept != name and kept in held:
            return kept
    return None
