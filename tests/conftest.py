"""Shared fixtures: real model files, real tokenizers, real WordNet; offline."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def minilm_path():
    from priorkit.resources import minilm_path as path

    return path()


@pytest.fixture(scope="session")
def minilm_tokenizer(minilm_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_path))


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory):
    """A plug-in folder holding only the trigram test plug-in (tests/support/plugins/trigram_plugin.py)."""
    from support.workload import write_plugin

    folder = tmp_path_factory.mktemp("plugins")
    write_plugin(folder)
    return folder


@pytest.fixture(scope="session")
def xia2021():
    import priorkit

    return priorkit.get_provider("wordnet", measure="xia2021")


@pytest.fixture(scope="session")
def stsb_dev_pairs():
    """The first 200 real STS-B dev pairs (text_a, text_b)."""
    from priorkit.resources import stsb_path

    pairs = []
    with open(stsb_path("dev"), encoding="utf-8") as fh:
        for line in fh:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 7:
                pairs.append((fields[5], fields[6]))
            if len(pairs) == 200:
                break
    return pairs


def _stsb_sentences(n: int = 3000) -> list[str]:
    from priorkit.resources import stsb_path

    out = []
    with open(stsb_path("train"), encoding="utf-8") as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if len(f) >= 7:
                out += [f[5], f[6]]
            if len(out) >= n:
                break
    return out


@pytest.fixture(scope="session")
def bpe_tokenizer():
    """A real byte-level BPE tokenizer (RoBERTa's algorithm and special-token
    layout <s> A </s></s> B </s>), trained here on STS-B text because no
    pretrained RoBERTa files are reachable offline."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    tok = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    tok.train_from_iterator(_stsb_sentences(), vocab_size=3000, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>"], show_progress=False)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")), trim_offsets=True)
    return PreTrainedTokenizerFast(tokenizer_object=tok._tokenizer, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", pad_token="<pad>", unk_token="<unk>")


@pytest.fixture(scope="session")
def sentencepiece_tokenizer():
    """A real SentencePiece (Unigram, Metaspace) tokenizer with XLM-R's layout,
    trained here on STS-B text."""
    from tokenizers import SentencePieceUnigramTokenizer, processors
    from transformers import PreTrainedTokenizerFast

    tok = SentencePieceUnigramTokenizer()
    tok.train_from_iterator(_stsb_sentences(), vocab_size=3000,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>"], unk_token="<unk>",
                            show_progress=False)
    s, e = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", s), ("</s>", e)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok._tokenizer, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", pad_token="<pad>", unk_token="<unk>")


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, minilm_path):
    """A 2-layer random BERT beside the MiniLM's real tokenizer files (loads like any local model)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    out = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=128)
    BertModel(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(str(minilm_path)).save_pretrained(out)
    return out


@pytest.fixture(scope="session", autouse=True)
def torch_threads_per_worker():
    """Under pytest-xdist (scripts/test.sh) each worker takes its share of the cores, so two
    workers on two cores do not each spin up two torch threads and wait on one another."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        try:
            cores = len(os.sched_getaffinity(0)) or 1
        except AttributeError:  # macOS, Windows
            cores = os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // workers))
    yield


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run fastest on one thread, and do not spin-wait against other jobs."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
