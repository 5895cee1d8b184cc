"""Small local stand-ins for the Hugging Face checkpoints PyTriton's examples download.

Each is the example's architecture with a few layers, seeded random weights and a tokenizer (or image processor)
of its own, saved under the name the example passes to ``from_pretrained`` (``microsoft/DialoGPT-small``,
``microsoft/resnet-50``, ``facebook/bart-large-mnli``), so ``from_pretrained`` run in that directory finds it on
disk instead of the Hub. Nothing is downloaded: the machines here reach no model hub.

    python tests/apps/pytriton_hf/make_models.py DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

DIALOGPT = "microsoft/DialoGPT-small"
RESNET = "microsoft/resnet-50"
BART_MNLI = "facebook/bart-large-mnli"
# A few sentences for the tokenizers to learn their byte-level merges from: enough for every word the tests send.
CORPUS = [
    "Does money buy happiness? Money buys a house, not a home.",
    "I like music, dancing and cooking. Travel is the best teacher.",
    "The match was won in the last minute, and the festival went on all night.",
    "A movie about literature and sport, for entertainment.",
    "This example is about travel, cooking, dancing, sport, music, entertainment, festival, movie and literature.",
]
LABELS = ["tabby cat", "tiger cat", "remote control"]


def make_all(directory: Path) -> dict[str, Path]:
    """Every stand-in under ``directory``, keyed by the name the examples load it by."""
    import torch

    made = {}
    # Seeds under which each answers more than one thing: a reply of many tokens, and zero-shot labels that differ
    # between the tests' sequences (most random BARTs give every sequence one label).
    for name, make, seed in ((DIALOGPT, _dialogpt, 0), (RESNET, _resnet, 0), (BART_MNLI, _bart_mnli, 2)):
        torch.manual_seed(seed)
        made[name] = make(directory / name)
    return made


def _byte_level_bpe(special: list[str], vocab_size: int):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    return tokenizer


def _dialogpt(path: Path) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    eos = "<|endoftext|>"
    backend = _byte_level_bpe([eos], vocab_size=400)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=eos, bos_token=eos, unk_token=eos, model_max_length=256,
        model_input_names=["input_ids", "attention_mask"],
    )  # fmt: skip
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=256, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # random weights would often end a reply at once: the tied end token's row scores 0
        model.transformer.wte.weight[tokenizer.eos_token_id].zero_()
    # A random net repeats one token, often a byte that is no text alone: the checkpoint's generation defaults (which
    # generate applies under the example's own arguments) keep each token once and only tokens that are text.
    unprintable = [i for i in range(len(tokenizer)) if not _ascii_text(tokenizer.decode([i]))]
    model.generation_config.no_repeat_ngram_size = 1
    model.generation_config.suppress_tokens = [i for i in unprintable if i != tokenizer.eos_token_id]
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _ascii_text(text: str) -> bool:
    return bool(text) and all(32 <= ord(c) < 127 for c in text)


def _resnet(path: Path) -> Path:
    from transformers import ConvNextImageProcessor, ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="bottleneck",
        id2label=dict(enumerate(LABELS)), label2id={label: i for i, label in enumerate(LABELS)},
    )  # fmt: skip
    ResNetForImageClassification(config).eval().save_pretrained(path)
    ConvNextImageProcessor(size={"shortest_edge": 64}, crop_pct=0.875).save_pretrained(path)  # resnet-50's kind
    return path


def _bart_mnli(path: Path) -> Path:
    from tokenizers import processors
    from transformers import BartConfig, BartForSequenceClassification, PreTrainedTokenizerFast

    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    backend = _byte_level_bpe(special, vocab_size=500)
    backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")),
                                                          ("<s>", backend.token_to_id("<s>")))  # fmt: skip
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        pad_token="<pad>", unk_token="<unk>", mask_token="<mask>", model_max_length=256,
        model_input_names=["input_ids", "attention_mask"],  # BART takes no token types
    )  # fmt: skip
    labels = ["contradiction", "neutral", "entailment"]  # bart-large-mnli's: the zero-shot pipeline reads entailment
    config = BartConfig(
        vocab_size=len(tokenizer), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id, forced_eos_token_id=tokenizer.eos_token_id,
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip
    BartForSequenceClassification(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


if __name__ == "__main__":
    for name, where in make_all(Path(sys.argv[1])).items():
        print(f"{name}: {where}")
