"""`hdlc splice`: the compiled machine in front of a Qwen3.5 checkpoint's own layers."""
