# a 1 x 2048 packed batch (two documents of 1024), deterministic tokens
import json, struct, random
random.seed(0)
T = 2048
ids = [random.randrange(2048) for _ in range(T)]
labels = ids[1:] + [-100]
pos = [i % 1024 for i in range(T)]
def blob(v): return struct.pack("<%dq" % len(v), *v)
tensors = [("input_ids", ids), ("labels", labels), ("position_ids", pos)]
header, data, off = {}, b"", 0
for name, v in tensors:
    b = blob(v); header[name] = {"dtype": "I64", "shape": [1, T], "data_offsets": [off, off + len(b)]}; data += b; off += len(b)
h = json.dumps(header).encode(); h += b" " * ((8 - len(h) % 8) % 8)
open(".device/batch.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
