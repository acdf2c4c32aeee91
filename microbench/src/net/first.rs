//! What the transport holds of the first large message a pair's
//! connection carries ([`first_bulk_held`]), before the sweep's growing
//! messages and streams: how an application's move finds a connection
//! that its iterations used only for halos of tens of KiB. Over TCP what
//! a socket holds depends on what its connection carried before
//! (`scripts/send-hold.sh`: about 3 MB of a 4 MiB message on a fresh
//! connection across a 1 Gbit/s emulated link, under 1 MB after a ramp of
//! 256 KiB-2 MiB messages), so the profile keeps this figure
//! (`PairCost::send_buffer_first_bytes`) beside the one taken after the
//! sweep (`PairCost::send_buffer_bytes`).

use super::TAG;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::time::Instant;

/// One-byte round trips before the large message; the fastest is
/// taken.
const SMALL_TRIPS: usize = 5;

/// Bytes of one [`mheta_profile::COLD_BYTES`] message from `s` to `d`,
/// the first large one between them, still on their way to `d` (whose
/// receive is posted) when `s`'s send returned: on `s` (None elsewhere).
/// Both call it. The message's one-way time is its send to `d`'s
/// one-byte answer, less half the fastest of a few one-byte round trips
/// taken just before; a send that returned after s of a one-way t left
/// (t - s) / t of the bytes to go.
pub fn first_bulk_held(world: &SimpleCommunicator, s: i32, d: i32) -> Option<u64> {
    let size = mheta_profile::COLD_BYTES;
    let me = world.rank();
    let mut one = [0u8; 1];
    if me == s {
        let sbuf = vec![6u8; size];
        let pd = world.process_at_rank(d);
        // The one-byte round trip: the fastest of a few (one the host
        // stalled would take the large message's whole one-way and
        // leave no measurement), the last of them `d`'s answer that
        // its receive is posted.
        let mut small = f64::INFINITY;
        for _ in 0..SMALL_TRIPS {
            let t = Instant::now();
            pd.send_with_tag(&[7u8][..], TAG);
            pd.receive_into_with_tag(&mut one[..], TAG);
            small = small.min(t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        pd.send_with_tag(&sbuf[..], TAG);
        let sent = t.elapsed().as_secs_f64();
        pd.receive_into_with_tag(&mut one[..], TAG);
        let one_way = t.elapsed().as_secs_f64() - small / 2.0;
        (one_way > 0.0)
            .then(|| (((one_way - sent) / one_way).clamp(0.0, 1.0) * size as f64).round() as u64)
    } else if me == d {
        let mut buf = vec![5u8; size];
        let ps = world.process_at_rank(s);
        for _ in 1..SMALL_TRIPS {
            ps.receive_into_with_tag(&mut one[..], TAG);
            ps.send_with_tag(&[8u8][..], TAG);
        }
        ps.receive_into_with_tag(&mut one[..], TAG);
        mpi::request::scope(|scope| {
            let req = ps.immediate_receive_into_with_tag(scope, &mut buf[..], TAG);
            ps.send_with_tag(&[8u8][..], TAG);
            req.wait();
        });
        ps.send_with_tag(&[9u8][..], TAG);
        None
    } else {
        None
    }
}
