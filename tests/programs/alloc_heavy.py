# An allocation-heavy python3 script: dicts, lists, strings, objects, churn.
import hashlib, json, random, sys
random.seed(42)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
d = {}
for i in range(N):
    d[str(i) * (i % 7 + 1)] = [i, str(i), {"k": i % 13}]
    if i % 3 == 0:
        d.pop(str(i - 1) * ((i - 1) % 7 + 1), None)
words = ["".join(random.choice("abcdefgh") for _ in range(random.randint(1, 30))) for _ in range(N // 4)]
words.sort()
class Node:
    __slots__ = ("v", "kids")
    def __init__(self, v):
        self.v = v
        self.kids = []
root = Node(0)
stack = [root]
for i in range(1, N // 2):
    n = Node(i)
    stack[random.randrange(len(stack))].kids.append(n)
    stack.append(n)
blob = json.dumps({"words": words[:5000], "n": len(d)})
print(len(d), len(words), words[0], words[-1], len(blob))
print(hashlib.sha256(blob.encode()).hexdigest())
print(sum(len(n.kids) for n in stack))
