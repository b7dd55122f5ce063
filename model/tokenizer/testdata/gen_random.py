#!/usr/bin/env python3
"""Development-time generator of corpus-random.json (not run by tests): random
strings built from pieces that stress the pre-tokenizer (every character
class, whitespace runs, CJK boundaries, marks, emoji sequences, digits) and
special-token matching (whole, partial and overlapping special tokens).
Deterministic: the same seed gives the same file.

    python3 model/tokenizer/testdata/gen_random.py
"""
import json
import os
import random

PIECES = [
    "a", "Z", "hello", "The", "ing", "'s", "'", "x", "q",
    "0", "7", "42", "123", "2024", "3.14",
    " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r", "\r\n", " \n", "\n ", "\x0b", "\x0c",
    ".", ",", "!", "?", "...", "(", ")", "[", "]", "{", "}", "\"", "-", "--", "_", "#", "$", "@", "=", "==", "+", "/", "\\", "`", "~", "^", "|", "<", ">", "&", "*", "%", ";", ":",
    "你", "好", "世界", "中文", "龥", "龦", "ひらがな", "カタカナ", "ー", "・", "゠", "ゝ", "㐀",
    "한국어", "가", "ㄱ", "مرحبا", "ب", "\u064e", "\u0301", "\u0308", "e\u0301", "ñ", "ß", "Ω", "ж", "ก", "\u0e31", "ह", "\u093f",
    "😀", "👍", "\U0001F3FD", "\u200d", "\ufe0f", "❤", "🇫", "🇷", "1\ufe0f\u20e3", "©", "€", "∑", "→",
    "\u00a0", "\u3000", "\u2028", "\u2003", "\u0085", "\u200b", "\ufeff", "\u00ad",
    "\x01", "\x1f", "\x7f", "\ue000", "\ufffd", "𝐀", "𠀀", "\U0002EBF0", "½", "²", "٣", "１", "Ａ", "！", "ｶ",
    "<think>", "</think>", "<thi", "nk>", "</", "<｜end▁of▁sentence｜>", "<｜", "▁", "<|A|>", "|><|B|>", "<|", "|>", "<custom_ud>", "<tool_call>", "<arg_key>",
    "<|begin_of_text|>", "<|end_of_text|>",
]


def main():
    rng = random.Random(20261130)
    out = []
    for _ in range(600):
        n = rng.randint(1, 24)
        out.append("".join(rng.choice(PIECES) for _ in range(n)))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "corpus-random.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
