//! Streaming (non-temporal) stores for label images larger than the caches.
//!
//! A label image is written once and not read again by the labeler. Plain stores read every
//! cache line from memory before writing it (a read for ownership), so writing a 64 MB image
//! moves 128 MB; streaming stores skip that read. On the 2-core development machine a one-thread
//! 64 MB fill took 7.9–9.0 ms with plain stores and 4.2–4.8 ms streamed. The strip labeler makes
//! each label row in a cached staging row and streams every 64-site word out as soon as it is
//! made (`cpu::strips`): the 8-connected 4096² spiral on one thread went from 16.4–22.4 to
//! 11.1–11.9 ms (fastest of 10) on the H200 machine's Xeon. Images below [`STREAM_BYTES`] keep
//! plain stores: the caller reads them next, from the cache.

/// Output images of at least this many bytes are streamed: twice the 32 MiB last-level cache of
/// the development machine, so that an image which fits stays cached for its reader.
pub(crate) const STREAM_BYTES: usize = 64 << 20;

/// Streams a buffer into `dst` while the buffer is being made, left to right: each
/// [`Streamer::upto`] sends what is ready in whole 32-byte-aligned streaming stores, and
/// [`Streamer::finish`] the rest with plain ones. Sending each piece while it is still in the
/// first-level cache lets the stores drain while the next piece is made. Call [`stream_fence`]
/// before the data is handed to another thread.
pub(crate) struct Streamer<'a, T> {
    dst: &'a mut [T],
    /// Elements of `dst` written so far.
    done: usize,
}

impl<'a, T: Copy> Streamer<'a, T> {
    pub(crate) fn new(dst: &'a mut [T]) -> Self {
        Streamer { dst, done: 0 }
    }

    /// Sends `src[..end]` (the buffer's ready part, `src` as long as `dst`) as far as whole
    /// aligned 32-byte stores reach; the elements before `dst`'s first aligned address go with
    /// plain stores.
    #[inline]
    pub(crate) fn upto(&mut self, src: &[T], end: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let size = std::mem::size_of::<T>();
            // Only whole elements in each store.
            if size == 0 || CHUNK % size != 0 {
                return;
            }
            let (n, per) = (self.dst.len(), CHUNK / size);
            let end = end.min(n).min(src.len());
            let head = ((self.dst.as_ptr() as usize).wrapping_neg() % CHUNK / size).min(n);
            if self.done < head {
                if end < head {
                    return;
                }
                self.dst[self.done..head].copy_from_slice(&src[self.done..head]);
                self.done = head;
            }
            let stop = head + (end - head) / per * per;
            if stop <= self.done {
                return;
            }
            let bytes = (stop - self.done) * size;
            // SAFETY: `src[done..stop]` and `dst[done..stop]` are in bounds, `dst + done` is
            // 32-byte aligned (from `head`, in whole chunks) and `bytes` a multiple of 32.
            unsafe {
                let d = self.dst.as_mut_ptr().add(self.done).cast::<u8>();
                let s = src.as_ptr().add(self.done).cast::<u8>();
                if std::arch::is_x86_feature_detected!("avx") {
                    stream_avx(d, s, bytes);
                } else {
                    stream_sse2(d, s, bytes);
                }
            }
            self.done = stop;
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (src, end);
    }

    /// Sends the rest of `src` with plain stores.
    #[inline]
    pub(crate) fn finish(&mut self, src: &[T]) {
        let n = self.dst.len();
        self.dst[self.done..].copy_from_slice(&src[self.done..n]);
        self.done = n;
    }
}

/// The streaming stores' unit: 32 bytes. On the development machine's AMD EPYC a 64 MB row-by-row
/// copy took 3.8–4.1 ms in 32-byte streaming stores but 8.8–9.1 ms in 16-byte ones, no faster
/// than plain stores (7.6–9.2 ms).
#[cfg(target_arch = "x86_64")]
const CHUNK: usize = 32;

/// `bytes` (a multiple of 32) from `s` to the 32-byte-aligned `d` in 32-byte streaming stores.
///
/// # Safety
/// Both ranges in bounds, `d` aligned, AVX present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn stream_avx(d: *mut u8, s: *const u8, bytes: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};
    for j in (0..bytes).step_by(32) {
        let v = _mm256_loadu_si256(s.add(j).cast::<__m256i>());
        _mm256_stream_si256(d.add(j).cast::<__m256i>(), v);
    }
}

/// [`stream_avx`] in 16-byte stores, for processors without AVX.
///
/// # Safety
/// Both ranges in bounds, `d` 16-byte aligned.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_sse2(d: *mut u8, s: *const u8, bytes: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    for j in (0..bytes).step_by(16) {
        let v = _mm_loadu_si128(s.add(j).cast::<__m128i>());
        _mm_stream_si128(d.add(j).cast::<__m128i>(), v);
    }
}

/// Orders the streaming stores made so far before any later store of this thread, so that a
/// thread which synchronises with this one afterwards sees them.
#[inline]
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `src` in uneven pieces, as a row is made word by word.
    fn copy<T: Copy>(dst: &mut [T], src: &[T]) {
        let mut s = Streamer::new(dst);
        for end in (0..src.len()).step_by(7) {
            s.upto(src, end);
        }
        s.finish(src);
    }

    #[test]
    fn streamer_copies_every_offset_and_length() {
        let src: Vec<u32> = (1..=300).collect();
        let wide: Vec<u64> = (1..=300).map(|v| v * 0x1_0000_0001).collect();
        for off in 0..4 {
            for len in [0usize, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 200, 296] {
                let mut buf = vec![0u32; 304];
                copy(&mut buf[off..off + len], &src[..len]);
                stream_fence();
                assert_eq!(&buf[off..off + len], &src[..len], "u32 off {off} len {len}");
                assert!(buf[..off].iter().chain(&buf[off + len..]).all(|&v| v == 0));
                let mut buf = vec![0u64; 304];
                copy(&mut buf[off..off + len], &wide[..len]);
                stream_fence();
                assert_eq!(
                    &buf[off..off + len],
                    &wide[..len],
                    "u64 off {off} len {len}"
                );
                assert!(buf[..off].iter().chain(&buf[off + len..]).all(|&v| v == 0));
            }
        }
    }
}
