package org.apache.curator.test;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

/** Temporary directories for servers' data, and deleting them. */
public class DirectoryUtils {
    /** A new empty directory under the system's temporary directory. */
    public static File createTempDirectory() {
        try {
            File dir = Files.createTempDirectory("zk-mock-curator-test").toFile();
            dir.deleteOnExit();
            return dir;
        } catch (IOException e) {
            throw new IllegalStateException("cannot create a temporary directory", e);
        }
    }

    /** Deletes the file, or the directory and everything in it (symbolic links are not followed). */
    public static void deleteRecursively(File file) throws IOException {
        if (file.isDirectory() && !Files.isSymbolicLink(file.toPath())) {
            deleteDirectoryContents(file);
        }
        if (!file.delete() && file.exists()) {
            throw new IOException("cannot delete " + file);
        }
    }

    /** Deletes everything in the directory, keeping the directory. */
    public static void deleteDirectoryContents(File directory) throws IOException {
        File[] files = directory.listFiles();
        if (files == null) {
            throw new IOException("cannot list " + directory);
        }
        for (File f : files) {
            deleteRecursively(f);
        }
    }
}
