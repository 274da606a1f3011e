"""The SplitMix64 generator of `stiction::math::SplitMix64`, in Python, so that the Python examples draw
the same excitation phases and noise as the Rust ones."""

import math

_MASK = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (Steele, Lea & Flood 2014): 64 random bits per call from a 64-bit counter."""

    def __init__(self, seed):
        self.state = seed & _MASK

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def uniform(self):
        """A uniform sample in [0, 1)."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def range(self, lo, hi):
        """A uniform sample in [lo, hi)."""
        return lo + (hi - lo) * self.uniform()

    def normal(self):
        """A standard normal sample (Box–Muller)."""
        u1 = max(self.uniform(), 2.2250738585072014e-308)
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
