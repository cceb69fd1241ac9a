"""Integrations of zapspec with inference engines, one small module each:
``zapspec.contrib.hf`` (transformers' ``generate``) and
``zapspec.contrib.llama_cpp`` (llama-cpp-python). Neither engine is
imported until its module is."""
