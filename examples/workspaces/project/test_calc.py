"""The project's tests: `python3 test_calc.py` exits 0 when they pass."""

from calc import add, mean

assert add(2, 3) == 5, f"add(2, 3) is {add(2, 3)}, expected 5"
assert mean([4, 6]) == 5, f"mean([4, 6]) is {mean([4, 6])}, expected 5"
print("2 passed")
