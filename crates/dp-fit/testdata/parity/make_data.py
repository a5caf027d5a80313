"""Writes data.csv, the parity tests' table: 600 rows from a fixed linear congruential
generator (no library randomness, so the file is the same wherever it is made)."""

state = 20261206


def uniform():
    global state
    state = (6364136223846793005 * state + 1442695040888963407) % 2**64
    return (state >> 11) / 2**53


with open("data.csv", "w") as out:
    out.write("age,hours,color,size,outcome\n")
    for _ in range(600):
        age = round(18 + 70 * uniform(), 1)
        hours = round(10 + 60 * uniform(), 1)
        color = ["red", "green", "blue"][int(3 * uniform())]
        size = ["S", "M", "L", "XL"][int(4 * uniform())]
        score = (age - 45) / 20 + (hours - 40) / 25 + (0.8 if color == "blue" else -0.3)
        outcome = "yes" if score + 1.2 * (uniform() - 0.5) > 0 else "no"
        out.write(f"{age},{hours},{color},{size},{outcome}\n")
