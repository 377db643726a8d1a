package io.zkmock;

import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Modifier;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit 5 extension that injects a {@link ZkMockServer} into any parameter of that type.
 *
 * <pre>{@code
 * @ExtendWith(ZkMockExtension.class)
 * class LockTest {
 *     @Test
 *     void holderExpires(ZkMockServer server) throws Exception {
 *         // a server of its own for this test, closed after it
 *     }
 * }
 * }</pre>
 *
 * <p>A parameter of a test method or of a {@code @BeforeEach} / {@code @AfterEach} method
 * gets a server for that test, closed after it. A parameter of a {@code @BeforeAll}
 * method or of the test class's constructor gets one server for the class, closed after
 * its last test; the class's test methods then get that same server.
 */
public final class ZkMockExtension implements ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE =
        ExtensionContext.Namespace.create(ZkMockExtension.class);
    private static final String KEY = "server";

    /** Closes the server with the context it was made for. */
    private static final class Held implements ExtensionContext.Store.CloseableResource {
        final ZkMockServer server;

        Held(ZkMockServer server) {
            this.server = server;
        }

        @Override
        public void close() throws Exception {
            server.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == ZkMockServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Executable owner = parameter.getDeclaringExecutable();
        boolean perClass = owner instanceof Constructor || Modifier.isStatic(owner.getModifiers());
        ExtensionContext scope = perClass ? classContext(context) : context;
        if (!perClass) {
            // A class that has a server of its own shares it with its tests.
            Held shared = classContext(context).getStore(NAMESPACE).get(KEY, Held.class);
            if (shared != null) {
                return shared.server;
            }
        }
        return scope.getStore(NAMESPACE).getOrComputeIfAbsent(KEY, k -> {
            try {
                return new Held(new ZkMockServer());
            } catch (Exception e) {
                throw new ParameterResolutionException("cannot start zk-mock: " + e.getMessage(), e);
            }
        }, Held.class).server;
    }

    private static ExtensionContext classContext(ExtensionContext context) {
        ExtensionContext c = context;
        while (c.getTestMethod().isPresent() && c.getParent().isPresent()) {
            c = c.getParent().get();
        }
        return c;
    }
}
