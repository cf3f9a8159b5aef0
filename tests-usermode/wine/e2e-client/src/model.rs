//! The client's model of the device's plaintext, kept in a file between runs, and a small
//! seeded generator (xorshift64*), so a run is replayable from its seed.

/// The expected bytes of the whole device.
pub struct Model {
    /// Byte `i` is what a read at offset `i` must return.
    pub bytes: Vec<u8>,
}

impl Model {
    pub fn new(len: usize) -> Model {
        Model {
            bytes: vec![0; len],
        }
    }

    pub fn load(path: &str) -> Result<Model, String> {
        std::fs::read(path)
            .map(|bytes| Model { bytes })
            .map_err(|e| format!("cannot read model {path}: {e}"))
    }

    pub fn save(&self, path: &str) -> Result<(), String> {
        std::fs::write(path, &self.bytes).map_err(|e| format!("cannot write model {path}: {e}"))
    }

    /// Where `data` read at `offset` differs from the model, if anywhere.
    pub fn diff(&self, offset: usize, data: &[u8]) -> Option<String> {
        let Some(expected) = self.bytes.get(offset..offset + data.len()) else {
            return Some(format!(
                "read at {offset} of {} bytes is past the model",
                data.len()
            ));
        };
        let i = expected.iter().zip(data).position(|(a, b)| a != b)?;
        Some(format!(
            "byte {} (read at {offset}, length {}): got {:#04x}, model {:#04x}",
            offset + i,
            data.len(),
            data[i],
            expected[i]
        ))
    }
}

/// xorshift64*: small, seeded, good enough for test patterns.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform enough in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}
