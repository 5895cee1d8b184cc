"""Triton's ModelConfig protobuf schema (r24.10) compiled to Python; see proto/model_config.proto."""
