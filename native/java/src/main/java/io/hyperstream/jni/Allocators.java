package io.hyperstream.jni;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.unsafe.UnsafeAllocationManager;

/**
 * The process-wide Arrow root allocator for data that crosses from native code. Each reader takes
 * a child of it and closes the child when done, which is where a leak would show.
 *
 * <p>The allocation manager is named explicitly rather than found by class name at run time, so
 * the lookup survives relocation of Arrow inside a shaded JAR.
 */
public final class Allocators {
    private static final RootAllocator ROOT = new RootAllocator(RootAllocator.configBuilder()
            .allocationManagerFactory(UnsafeAllocationManager.FACTORY)
            .maxAllocation(Long.MAX_VALUE)
            .build());

    private Allocators() {}

    /** A child allocator without a limit of its own; close it when its vectors are released. */
    public static BufferAllocator child(String name) {
        return ROOT.newChildAllocator(name, 0, Long.MAX_VALUE);
    }
}
