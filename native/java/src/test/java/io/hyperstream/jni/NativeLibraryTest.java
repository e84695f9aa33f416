package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NativeLibraryTest {
    @Test
    void theLibraryIsLoadedFromTheBundledResourceNotTheLibraryPath() {
        NativeLibrary.load();
        String from = NativeLibrary.loadedFrom();
        assertTrue(from.endsWith("/native/linux-x86_64/libhyperstream.so"), from);
        assertFalse(System.getProperty("java.library.path").contains("release"),
                "the tests run with a library path that holds no copy of the library");
        assertEquals("linux-x86_64", NativeLibrary.platform());
    }

    @Test
    void versionAndBackendProbeAnswer() {
        assertTrue(NativeLibrary.version().matches("\\d+\\.\\d+\\.\\d+.*"), NativeLibrary.version());
        String backends = NativeLibrary.gpuBackends();
        assertTrue(backends.startsWith("cpu: available"), backends);
        assertTrue(backends.contains("cuda: "), backends);
        assertTrue(backends.contains("wgpu: "), backends);
    }
}
