// Device memory and library handles kept across calls (the vendor handles and
// workspaces, k37's partial tiles) are freed while the CUDA context still
// lives: each owner registers its release function when it first allocates,
// and the CUDA executor runs them all when it goes. A static destructor would
// run after the context is gone at exit, and fail; never freeing them leaves
// compute-sanitizer's leak check a report per allocation.
#pragma once

namespace rigel::cuda {

using ReleaseFn = void (*)() noexcept;

// Registers `release`; registering the same function again changes nothing.
void register_release(ReleaseFn release);

// Runs every registered function once, in the order they were registered, then
// forgets them (an owner registers again when it next allocates). Never throws.
void release_device_caches() noexcept;

}  // namespace rigel::cuda
