from repogen import batch


@batch
def stable(x):
    return {"y": x * 2}
