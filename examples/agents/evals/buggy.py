def total(items):
    result = 0
    for i in range(len(items) + 1):
        result += items[i]
    return result
