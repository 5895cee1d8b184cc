"""What a client of examples/operating/app.py sees: answers, error codes, and the models' own metrics.

python examples/operating/client.py 127.0.0.1:8000 127.0.0.1:8002
"""

import sys
import urllib.request

import numpy as np
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

http_url, metrics_url = sys.argv[1], sys.argv[2]
client = httpclient.InferenceServerClient(http_url)


def ask(model, batched=True, **values):
    inputs = []
    for name, value in values.items():
        array = np.array([[value]] if batched else [value], dtype=np.int64)
        tensor = httpclient.InferInput(name, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    try:
        result = client.infer(model, inputs)
        print(model, values, "->", result.as_numpy(result.get_response()["outputs"][0]["name"]).tolist())
    except InferenceServerException as error:
        print(model, values, "->", error.status(), error.message())


ask("Describe", item=2)
ask("Describe", item=2)  # the same request again: answered from Triton's response cache
ask("Price", item=1, quantity=2)
ask("Price", item=1, quantity=0)
ask("Price", item=9, quantity=1)
ask("Quote", item=9, quantity=1)
ask("Stock", batched=False, item=1)
ask("Stock", batched=False, item=3)

with urllib.request.urlopen(f"http://{metrics_url}/metrics") as response:  # Prometheus's text format
    families = text_string_to_metric_families(response.read().decode())
    lines = []
    for family in families:
        if family.name.startswith("shop_") or family.name == "nv_cache_num_hits_per_model":
            for sample in family.samples:
                labels = {k: v for k, v in sample.labels.items() if k != "version"}
                lines.append(f"{sample.name} {labels} {sample.value}")
    print("\n".join(sorted(lines)))
