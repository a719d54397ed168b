// Package kvcapacity is vLLM's KV-cache capacity arithmetic: how many
// blocks a given amount of memory holds for a model's attention layers,
// how many tokens vLLM then reports as "GPU KV cache size", and what
// "Maximum concurrency for L tokens per request" it prints.
//
// It consumes a Model (the model's attention layers: how many of each
// kind, their KV heads, head size and sliding window, and the KV element
// size) and Settings (block size, max_model_len, max_num_batched_tokens),
// and produces a Geometry: the KV-cache groups vLLM forms, the bytes one
// block takes, and the worst-case blocks of one request. The simulator
// (package sim) sizes its cache with it and prints vLLM's start-up lines
// from it; the log reader (package vllmlog) recomputes a real server's
// printed figures with it. Sharing one implementation keeps what the
// simulator prints and what the log check expects from drifting apart.
//
// The arithmetic follows vLLM's V1 engine (vllm/v1/core/kv_cache_utils.py
// and vllm/v1/kv_cache_interface.py, v0.10 to v0.19): layers of one kind
// form groups of equal size, one block of the shared pool holds one page
// in one layer of every group, pages of smaller layers are made equal by
// giving those layers larger blocks, a sliding-window layer keeps only
// its window plus one step's budget, and the printed token count is the
// pool divided by the number of groups.
package kvcapacity
