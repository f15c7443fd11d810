# ---
# jupyter:
#   course:
#     exercises:
#       llama_block:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       llama_model:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       rms_norm:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       rope_layout:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       rotary_attention:
#         difficulty: 3
#         minutes: 25
#         points: 3
#       rotate_queries_keys:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       swiglu_feed_forward:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       swiglu_width:
#         difficulty: 1
#         minutes: 5
#         points: 1
#     grading_cell_timeout_s: 240
#     numbers_allowed:
#       '2019': the year of Zhang and Sennrich's RMSNorm paper, a citation
#       '2020': the year of Shazeer's GLU-variants paper, a citation
#       '2021': the year of Su et al.'s RoFormer paper, a citation
#       '2023': the year of Ainslie et al.'s GQA paper and of Llama 2, a citation
#     time_target_s: 60
#   jupytext:
#     cell_metadata_filter: all
#     notebook_metadata_filter: course,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Today's block: from GPT-2 to Llama, one change at a time
#
# The model you built in 09 is GPT-2's, from 2019. Open the code of any model released since 2023
# (Llama, Mistral, Qwen, OLMo, DeepSeek) and you find the same skeleton with four parts swapped:
# **RMSNorm** for LayerNorm, **rotary positions inside attention** for a learned position table, a
# **SwiGLU** MLP for the GELU one, and **grouped-query attention** for plain multi-head attention.
# You have met each of them on its own (RoPE in 02, GQA in 05, SwiGLU as an expert in 07, RMSNorm as a
# formula in 08). Here you put them together into one model, check it against the real thing, and
# train it beside a GPT-2-style model of the same size.
#
# 1. The diff from GPT-2's block, one change at a time, each with its cost in parameters and FLOPs
# 2. RMSNorm as a module
# 3. Rotary positions inside attention, at any offset, in both pair layouts
# 4. The SwiGLU feed-forward and its width
# 5. Grouped-query attention with RoPE and a KV cache
# 6. The block and the model
# 7. Trained side by side: a Llama-style and a GPT-2-style model of the same size, five seeds

# %%
import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.env import seed_everything

seed_everything(0)

# %% [markdown]
# ## 1 · The diff from GPT-2's block
#
# TODO(lead): the table of changes, each with its reason and its cost from 08's counter.

# %% [markdown]
# ## 2 · RMSNorm
#
# TODO(helper A): the rms_norm exercise.

# %% [markdown]
# ## 3 · Rotary positions inside attention
#
# TODO(helper A): the rotate_queries_keys and rope_layout exercises.

# %% [markdown]
# ## 4 · The SwiGLU feed-forward
#
# TODO(helper A): the swiglu_width and swiglu_feed_forward exercises.

# %% [markdown]
# ## 5 · Grouped-query attention with RoPE and a KV cache
#
# TODO(helper B): the rotary_attention exercise.

# %% [markdown]
# ## 6 · The block and the model
#
# TODO(helper B): the llama_block and llama_model exercises, the parameter count.

# %% [markdown]
# ## 7 · Trained side by side
#
# TODO(lead): GPT-2-style vs Llama-style at matched parameter counts, five seeds.
