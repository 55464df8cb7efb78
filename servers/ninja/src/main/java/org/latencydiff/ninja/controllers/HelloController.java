package org.latencydiff.ninja.controllers;

import com.google.inject.Singleton;
import ninja.Result;
import ninja.Results;
import org.latencydiff.ReferenceResponse;

/** The HelloWorld controller: a text result. */
@Singleton
public class HelloController {

    private static final String BODY = ReferenceResponse.get().body();

    public Result helloWorld() {
        return Results.text().render(BODY);
    }
}
