#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (run from fuzz/seeds/).

Small, valid inputs of each format plus the hostile rows of the hostile-input tests, so
the fuzzer starts from inputs that reach deep code. Deterministic."""
import json, os, struct

def put(target, name, data):
    os.makedirs(target, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(target, name), "wb") as f:
        f.write(data)

# --- gbnf
gbnf = {
    "json": r'''root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ( pair ( "," pair )* )? "}"
pair ::= string ":" value
array ::= "[" ( value ( "," value )* )? "]"
string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\""
number ::= "-"? [0-9]+ ( "." [0-9]+ )?
''',
    "expr": 'expr ::= expr "+" term | term\nterm ::= term "*" f | f\nf ::= "(" expr ")" | [0-9]+\n',
    "regex": 'root ::= /[a-z]+(\\.[a-z]+)*/ ws /\\d{2,3}/\nws ::= [ \\t]*\n',
    "counts": 'root ::= "a"{2,5} ("b" | "c"){3} "d"? "e"*\n',
    "nested_rep": 'root ::= /a{1000}{1000}{1000}/\n',
    "exp_dfa": 'root ::= /(a|b)*a(a|b){25}/\n',
    "nullable": 'S ::= A B\nA ::= "a" | ""\nB ::= "b" | A\n',
    "bytes": 'root ::= "\\xff\\x00" [^a-z] /(?-u:\\xff)/\n',
}
for k, v in gbnf.items():
    put("gbnf", k, v)

# --- json_schema
schemas = {
    "object": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}, "b": {"type": "integer", "minimum": -3, "maximum": 300}}, "required": ["a"]},
    "array": {"type": "array", "items": {"enum": ["x", 1, None, True]}, "minItems": 1, "maxItems": 4},
    "refs": {"$defs": {"n": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}]}}, "$ref": "#/$defs/n"},
    "oneof": {"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}, {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]}]},
    "pattern": {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.(com|org)$", "maxLength": 20},
    "patprops": {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "^[a-z]+$": {"type": "boolean"}}, "additionalProperties": False},
    "formats": {"type": "object", "properties": {"d": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid"}}},
    "notif": {"if": {"properties": {"t": {"const": "a"}}}, "then": {"required": ["x"]}, "else": {"not": {"required": ["y"]}}},
    "numbers": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0, "maximum": 100},
    "nested_rep": {"type": "string", "pattern": "^a{1000}{1000}{1000}$"},
    "ref_cycle": {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    "deps": {"type": "object", "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}},
}
for k, v in schemas.items():
    put("json_schema", k, json.dumps(v))

# --- earley_diff: first byte picks the grammar (0 json, 1 expr, 2 own)
put("earley_diff", "json", bytes([0]) + bytes([0, 5, 1, 3, 2, 7, 0, 1, 6, 0, 4, 200, 5, 2, 3, 9, 7, 0]))
put("earley_diff", "expr", bytes([1]) + bytes([0, 1, 1, 2, 6, 0, 2, 3, 4, 40, 5, 1, 0, 7]))
put("earley_diff", "own", bytes([2]) + b'root ::= ("a" | "bc")* "d"\n' + bytes([0, 1, 2, 2, 3, 0, 5, 1, 1, 3]))
put("earley_diff", "own_baseline", bytes([0x82]) + b'S ::= S "+" S | [0-9]\n' + bytes([0, 1, 1, 2, 6, 0, 0, 3, 5, 2]))

# --- checkpoint: config.json, NUL, model.safetensors
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 8,
       "hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1,
       "num_attention_heads": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-6,
       "rope_theta": 10000.0, "max_position_embeddings": 16, "tie_word_embeddings": True,
       "hidden_act": "silu"}
put(".", "tiny_config.json", json.dumps(cfg, indent=1))
d, v, i, hq, hkv = 4, 8, 8, 4, 2
tensors = [("model.embed_tokens.weight", [v, d]), ("model.layers.0.input_layernorm.weight", [d]),
           ("model.layers.0.self_attn.q_proj.weight", [hq, d]), ("model.layers.0.self_attn.k_proj.weight", [hkv, d]),
           ("model.layers.0.self_attn.v_proj.weight", [hkv, d]), ("model.layers.0.self_attn.o_proj.weight", [d, hq]),
           ("model.layers.0.post_attention_layernorm.weight", [d]), ("model.layers.0.mlp.gate_proj.weight", [i, d]),
           ("model.layers.0.mlp.up_proj.weight", [i, d]), ("model.layers.0.mlp.down_proj.weight", [d, i]),
           ("model.norm.weight", [d])]
header, data = {}, b""
for name, shape in tensors:
    n = 1
    for s in shape:
        n *= s
    raw = b"".join(struct.pack("<f", ((k * 7919) % 97) / 97.0 - 0.5) for k in range(n))
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header).encode()
h += b" " * ((8 - len(h) % 8) % 8)
st = struct.pack("<Q", len(h)) + h + data
cfg_bytes = json.dumps(cfg).encode()
put("checkpoint", "tiny", cfg_bytes + b"\0" + st)
huge = dict(cfg, max_position_embeddings=10**12)
put("checkpoint", "huge_context", json.dumps(huge).encode() + b"\0" + st)
put("checkpoint", "huge_layers", json.dumps(dict(cfg, num_hidden_layers=10**12)).encode() + b"\0" + st)
put("checkpoint", "config_only", json.dumps(cfg))

# --- gguf: a tiny llama GGUF (v3) with tokenizer metadata and one tensor
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b
def kv(key, ty, payload):
    return gstr(key) + struct.pack("<I", ty) + payload
U32, F32, STR, ARR = 4, 6, 8, 9
toks = ["<s>", "</s>"] + [chr(c) for c in range(97, 103)]
kvs = [
    kv("general.architecture", STR, gstr("llama")),
    kv("llama.context_length", U32, struct.pack("<I", 16)),
    kv("llama.embedding_length", U32, struct.pack("<I", 4)),
    kv("llama.block_count", U32, struct.pack("<I", 1)),
    kv("llama.feed_forward_length", U32, struct.pack("<I", 8)),
    kv("llama.attention.head_count", U32, struct.pack("<I", 2)),
    kv("llama.attention.head_count_kv", U32, struct.pack("<I", 1)),
    kv("llama.attention.layer_norm_rms_epsilon", F32, struct.pack("<f", 1e-5)),
    kv("tokenizer.ggml.model", STR, gstr("gpt2")),
    kv("tokenizer.ggml.tokens", ARR, struct.pack("<IQ", STR, len(toks)) + b"".join(gstr(t) for t in toks)),
    kv("tokenizer.ggml.merges", ARR, struct.pack("<IQ", STR, 1) + gstr("a b")),
    kv("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", 1)),
]
tinfo = gstr("token_embd.weight") + struct.pack("<I", 2) + struct.pack("<QQ", 4, 8) + struct.pack("<I", 0) + struct.pack("<Q", 0)
g = b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 1, len(kvs)) + b"".join(kvs) + tinfo
g += b"\0" * ((32 - len(g) % 32) % 32)
g += b"".join(struct.pack("<f", 0.01 * k) for k in range(32))
put("gguf", "tiny_llama", g)
put("gguf", "huge_string", b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 0, 1) + struct.pack("<Q", 2**62))
put("gguf", "huge_dims", b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 1, 0) + gstr("t") + struct.pack("<I", 2**32 - 1) + b"\0" * 32)

# --- tokenizer_json: a tiny byte-level BPE
vocab = {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "<|endoftext|>": 4}
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": 4, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}],
       "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
       "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                 "fuse_unk": False, "byte_fallback": False, "ignore_merges": False, "vocab": vocab, "merges": ["a b"]}}
put("tokenizer_json", "tiny_bpe", json.dumps(tok))
big = json.loads(json.dumps(tok)); big["model"]["vocab"]["z"] = 3_000_000_000
put("tokenizer_json", "id_3e9", json.dumps(big))
big = json.loads(json.dumps(tok)); big["model"]["vocab"]["z"] = 2**32 - 1
put("tokenizer_json", "id_u32_max", json.dumps(big))
big = json.loads(json.dumps(tok)); big["added_tokens"].append(dict(big["added_tokens"][0], id=2**32 - 2, content="<x>"))
put("tokenizer_json", "added_u32_max", json.dumps(big))
