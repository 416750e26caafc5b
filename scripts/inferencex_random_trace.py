#!/usr/bin/env python3
"""A request trace of InferenceX's random dataset (utils/bench_serving/benchmark_serving.py at
SemiAnalysis InferenceX 89ce6098: sample_random_requests), for podsim's `requests.trace`.

InferenceX draws each request's input and output length uniformly from the integers
[int(L * range_ratio), L] (its sample_uniform: numpy's randint(lower, upper + 1)), inputs first,
after `np.random.seed(seed)` (default 0); unlike vLLM's --random-range-ratio, which spans
[L (1 - r), L (1 + r)]. numpy's legacy RandomState stream is reproduced here without numpy:
MT19937 seeded by init_genrand, bounded integers by masked rejection on 32-bit draws (numpy's
buffered_bounded_masked_uint32), so the lengths are the client's own. With request rate inf
every request arrives at 0 s. Usage:

  scripts/inferencex_random_trace.py --num-prompts 320 --input-len 1024 --output-len 1024 \\
      --range-ratio 0.8 > trace.csv
"""
import argparse
import sys


class LegacyRandomState:
    """numpy.random.RandomState(seed)'s MT19937 stream and randint for ranges below 2**32."""

    def __init__(self, seed):
        self.state = [0] * 624
        self.state[0] = seed & 0xFFFFFFFF
        for i in range(1, 624):
            prev = self.state[i - 1]
            self.state[i] = (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
        self.index = 624

    def next_uint32(self):
        if self.index >= 624:
            s = self.state
            for k in range(624):
                y = (s[k] & 0x80000000) | (s[(k + 1) % 624] & 0x7FFFFFFF)
                s[k] = s[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y

    def randint(self, low, high, size):
        """Integers in [low, high), as RandomState.randint(low, high, size)."""
        span = high - low - 1
        mask = span
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> shift
        out = []
        for _ in range(size):
            while True:
                value = self.next_uint32() & mask
                if value <= span:
                    break
            out.append(low + value)
        return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-prompts", type=int, required=True)
    parser.add_argument("--input-len", type=int, required=True)
    parser.add_argument("--output-len", type=int, required=True)
    parser.add_argument("--range-ratio", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.num_prompts < 1 or args.input_len < 1 or args.output_len < 1 or not 0 <= args.range_ratio <= 1:
        sys.exit("inferencex_random_trace.py: expected positive counts and lengths and a range ratio in [0, 1]")
    rng = LegacyRandomState(args.seed)

    def lengths(length):
        return rng.randint(int(length * args.range_ratio), length + 1, args.num_prompts)

    inputs = lengths(args.input_len)
    outputs = lengths(args.output_len)
    print(f"# InferenceX random dataset: {args.num_prompts} prompts, input {args.input_len}, output "
          f"{args.output_len}, range ratio {args.range_ratio}, seed {args.seed} (scripts/inferencex_random_trace.py)")
    print("arrival_s,prompt_tokens,output_tokens")
    for i, o in zip(inputs, outputs):
        print(f"0,{i},{o}")


if __name__ == "__main__":
    main()
