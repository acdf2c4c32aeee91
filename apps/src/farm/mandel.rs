//! The farm's communication-heavy task: Mandelbrot tiles.
//!
//! The image is `size`×`size` pixels over the square [-2, 1] × [-1.5, 1.5]
//! of the complex plane (pixel centres), cut into `tile`×`tile` tiles in
//! row-major order (edge tiles are cut short). A task's request is the
//! tile's index; its result is the tile's escape counts, one u32 per
//! pixel (n in 0..=max_iter: the iterations z ← z² + c from z = 0 before
//! |z|² > 4, max_iter when it never does), 64 KiB for a 128-pixel tile,
//! which the master places in the image.
//!
//! Verification. Per tile: the result has the tile's length, its counts
//! are at most max_iter, a checksum over the counts matches the one the
//! worker computed before sending, and [`SAMPLES`] pixels chosen by a
//! hash of the tile index are recomputed by the master and must match
//! exactly (the iteration is the same floating-point operations on every
//! rank). Whole run: the image's total count, which is independent of
//! the worker set, the master and the order the tiles came back in,
//! against a serial recomputation of the whole image (`--verify-serial`).

use anyhow::{Result, bail};

/// Pixels of each tile the master recomputes.
pub const SAMPLES: usize = 16;

/// An image and its tiling.
#[derive(Clone, Debug)]
pub struct Mandel {
    pub size: u32,
    pub tile: u32,
    pub max_iter: u32,
}

/// A tile's pixel rectangle: first column and row, width and height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub w: u32,
    pub h: u32,
}

impl Mandel {
    /// Check the sizes: a tile of at least 1 pixel, no larger than the
    /// image, and at least one iteration.
    pub fn new(size: u32, tile: u32, max_iter: u32) -> Result<Mandel> {
        if size == 0 || tile == 0 || tile > size {
            bail!("--tile {tile} must be between 1 and --size {size} (both at least 1)");
        }
        if max_iter == 0 {
            bail!("--max-iter must be at least 1");
        }
        Ok(Mandel {
            size,
            tile,
            max_iter,
        })
    }

    fn tiles_across(&self) -> u32 {
        self.size.div_ceil(self.tile)
    }

    /// Tiles (tasks) in all.
    pub fn tiles(&self) -> u64 {
        u64::from(self.tiles_across()).pow(2)
    }

    /// Tile `k`'s rectangle.
    pub fn rect(&self, k: u64) -> Rect {
        let n = u64::from(self.tiles_across());
        let (tx, ty) = ((k % n) as u32, (k / n) as u32);
        let (x0, y0) = (tx * self.tile, ty * self.tile);
        Rect {
            x0,
            y0,
            w: self.tile.min(self.size - x0),
            h: self.tile.min(self.size - y0),
        }
    }

    /// The largest result, bytes (a full tile).
    pub fn max_result_bytes(&self) -> u64 {
        4 * u64::from(self.tile).pow(2)
    }

    /// Escape count of pixel (x, y).
    pub fn pixel(&self, x: u32, y: u32) -> u32 {
        let step = 3.0 / f64::from(self.size);
        let cr = -2.0 + (f64::from(x) + 0.5) * step;
        let ci = -1.5 + (f64::from(y) + 0.5) * step;
        let (mut zr, mut zi) = (0.0f64, 0.0f64);
        let mut n = 0;
        while n < self.max_iter {
            let (r2, i2) = (zr * zr, zi * zi);
            if r2 + i2 > 4.0 {
                break;
            }
            zi = 2.0 * zr * zi + ci;
            zr = r2 - i2 + cr;
            n += 1;
        }
        n
    }

    /// Tile `k`'s counts, row by row.
    pub fn compute(&self, k: u64) -> Vec<u32> {
        let r = self.rect(k);
        let mut out = Vec::with_capacity((r.w * r.h) as usize);
        for y in r.y0..r.y0 + r.h {
            for x in r.x0..r.x0 + r.w {
                out.push(self.pixel(x, y));
            }
        }
        out
    }

    /// The pixels of tile `k` the master recomputes: [`SAMPLES`] indices
    /// into the tile from a hash of k (the same on every run).
    pub fn samples(&self, k: u64) -> Vec<usize> {
        let r = self.rect(k);
        let n = (r.w * r.h) as u64;
        let mut h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        (0..SAMPLES)
            .map(|_| {
                h ^= h >> 29;
                h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                h ^= h >> 32;
                (h % n) as usize
            })
            .collect()
    }

    /// The per-tile check (see the module's doc): returns the tile's
    /// total count.
    pub fn check(&self, k: u64, counts: &[u32], sum: u64) -> Result<u64> {
        let r = self.rect(k);
        if counts.len() != (r.w * r.h) as usize {
            bail!("tile {k}: {} counts, not {}", counts.len(), r.w * r.h);
        }
        if let Some(c) = counts.iter().find(|&&c| c > self.max_iter) {
            bail!("tile {k}: count {c} above --max-iter {}", self.max_iter);
        }
        let mine = checksum(counts);
        if mine != sum {
            bail!("tile {k}: checksum {mine:#x} of the counts received, {sum:#x} sent");
        }
        for i in self.samples(k) {
            let (x, y) = (r.x0 + i as u32 % r.w, r.y0 + i as u32 / r.w);
            let want = self.pixel(x, y);
            if counts[i] != want {
                bail!(
                    "tile {k}: pixel ({x}, {y}) is {}, recomputed {want}",
                    counts[i]
                );
            }
        }
        Ok(counts.iter().map(|&c| u64::from(c)).sum())
    }

    /// The total count of tiles `0..n`, computed serially.
    pub fn serial_total(&self, n: u64) -> u64 {
        (0..n.min(self.tiles()))
            .map(|k| self.compute(k).iter().map(|&c| u64::from(c)).sum::<u64>())
            .sum()
    }
}

/// FNV-1a over the counts' little-endian bytes.
pub fn checksum(counts: &[u32]) -> u64 {
    counts
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// The wire form of a tile's result: the checksum, then the counts, all
/// little-endian.
pub fn encode(counts: &[u32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + 4 * counts.len());
    b.extend_from_slice(&checksum(counts).to_le_bytes());
    for c in counts {
        b.extend_from_slice(&c.to_le_bytes());
    }
    b
}

/// Read [`encode`]'s form: the counts and the checksum sent.
pub fn decode(b: &[u8]) -> Result<(Vec<u32>, u64)> {
    if b.len() < 8 || !(b.len() - 8).is_multiple_of(4) {
        bail!(
            "a tile result of {} bytes is not a checksum and u32 counts",
            b.len()
        );
    }
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    let counts = b[8..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((counts, u64::from_le_bytes(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_image_once() {
        let m = Mandel::new(100, 32, 50).unwrap();
        assert_eq!(m.tiles(), 16);
        let area: u32 = (0..m.tiles()).map(|k| m.rect(k).w * m.rect(k).h).sum();
        assert_eq!(area, 100 * 100);
        assert_eq!(
            m.rect(15),
            Rect {
                x0: 96,
                y0: 96,
                w: 4,
                h: 4
            }
        );
        assert!(Mandel::new(10, 11, 5).is_err());
        assert!(Mandel::new(10, 5, 0).is_err());
    }

    #[test]
    fn known_points_escape_as_they_should() {
        let m = Mandel::new(3, 1, 100).unwrap();
        // Pixel (1, 1) is c = -0.5: inside the set.
        assert_eq!(m.pixel(1, 1), 100);
        // Pixel (0, 0) is c = -1.5 - 1i: |z1|² = 3.25, |z2|² > 4.
        assert_eq!(m.pixel(0, 0), 2);
    }

    #[test]
    fn a_corrupted_tile_is_caught() {
        let m = Mandel::new(64, 16, 64).unwrap();
        let k = 5;
        let good = m.compute(k);
        let (c, s) = decode(&encode(&good)).unwrap();
        assert_eq!(
            m.check(k, &c, s).unwrap(),
            good.iter().map(|&v| u64::from(v)).sum::<u64>()
        );
        // A flipped count fails the checksum.
        let mut bad = good.clone();
        bad[3] ^= 1;
        assert!(m.check(k, &bad, s).is_err());
        // Consistent but wrong data (checksum recomputed) fails the samples.
        let wrong = m.compute(k + 1);
        let e = m
            .check(k, &wrong, checksum(&wrong))
            .unwrap_err()
            .to_string();
        assert!(e.contains("recomputed"), "{e}");
        assert!(m.check(k, &good[1..], s).is_err());
    }
}
