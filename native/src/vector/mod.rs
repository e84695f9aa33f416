//! Vector search. So far: the runtime probe for the GPU backends compiled into this build.

pub mod gpu;
