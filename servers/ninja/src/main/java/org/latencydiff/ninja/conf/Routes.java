package org.latencydiff.ninja.conf;

import ninja.Router;
import ninja.application.ApplicationRoutes;
import org.latencydiff.ninja.controllers.HelloController;

/** Ninja's conf.Routes: the one route. */
public class Routes implements ApplicationRoutes {

    @Override
    public void init(Router router) {
        router.GET().route("/").with(HelloController::helloWorld);
    }
}
