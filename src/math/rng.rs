//! A small, seedable, deterministic pseudo-random generator (SplitMix64, Steele,
//! Lea & Flood 2014) for random configurations and tests. Not for cryptography.

/// SplitMix64 generator: 64 bits of state, passes BigCrush, reproducible across platforms.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A uniform sample in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// A uniform sample in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// A standard normal sample (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
    /// A uniformly distributed unit quaternion, as `[w, x, y, z]` (Shoemake 1992).
    pub fn unit_quaternion(&mut self) -> [f64; 4] {
        let (u1, u2, u3) = (self.uniform(), self.uniform(), self.uniform());
        let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
        let t2 = std::f64::consts::TAU * u2;
        let t3 = std::f64::consts::TAU * u3;
        [b * t3.cos(), a * t2.sin(), a * t2.cos(), b * t3.sin()]
    }
}
