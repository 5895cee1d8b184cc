
def describe(requests):
    match len(requests):  # the server's own Python compiles this cell's source
        case 0:
            return []
        case _:
            return [{"summary": np.array([f"{r['x'].size} values".encode()], dtype=object)} for r in requests]


models.bind(
    "Describe",
    infer_func=describe,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="summary", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False),
)
