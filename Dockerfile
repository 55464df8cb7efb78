# latency-diff in a container: build the jars with the Maven wrapper and the C programs (lean
# client, floor responder) with gcc, then run the kit.
#   docker build --build-arg KIT_COMMIT="$(git rev-parse HEAD)" -t latency-diff .
#   docker run --rm --cpuset-cpus 0,1 -v "$PWD/results:/kit/results" latency-diff [run-all.sh options]
# Another JDK (21 or newer): docker build --build-arg JDK_IMAGE=eclipse-temurin:21-jdk -t latency-diff .
ARG JDK_IMAGE=eclipse-temurin:25-jdk

# Only what decides the dependencies (POMs, server metadata, the wrapper), so that the download layer
# below stays cached while sources change.
FROM ${JDK_IMAGE} AS poms
WORKDIR /src
COPY . .
RUN mkdir /poms \
 && find . -path ./results -prune -o \( -name pom.xml -o -name server.toml \) -exec cp --parents {} /poms \; \
 && cp -r mvnw .mvn latency_diff /poms/

FROM ${JDK_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008  # Debian/Ubuntu package versions differ per base image; the kit pins its Java and Python deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /kit
COPY --from=poms /poms/ ./
# Builds the empty modules once: downloads Maven, every plugin and every library into /root/.m2.
RUN ./mvnw -B -q package -DskipTests
COPY . .
# The kit's own build step, so that it records each module's build (.build/*.stamp) and run-all.sh in the
# container finds the jars up to date instead of building again.
RUN ./scripts/build.sh --force

FROM ${JDK_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008  # as above
RUN apt-get update \
 && apt-get install -y --no-install-recommends apache2-utils python3 python3-venv iproute2 procps nodejs \
 && rm -rf /var/lib/apt/lists/*
# A non-root user; run with --user "$(id -u):$(id -g)" to write results as yourself.
RUN useradd --create-home --uid 10001 bench
WORKDIR /kit
COPY --from=build --chown=10001:10001 /kit /kit
USER 10001:10001
# The Python packages of the analysis, pinned in requirements.txt (scripts/lib.sh checks the stamp).
RUN python3 -m venv /kit/.venv \
 && /kit/.venv/bin/pip install --no-cache-dir -q --disable-pip-version-check -r requirements.txt \
 && sha256sum requirements.txt | cut -d' ' -f1 > /kit/.venv/.requirements.sha256 \
 && mkdir -p /kit/results && chmod 0777 /kit/results
# The image has no .git: the commit it was built from is passed in (scripts/docker-smoke.sh does).
ARG KIT_COMMIT=unknown
ENV LATENCY_DIFF_IN_CONTAINER=1 LATENCY_DIFF_KIT_COMMIT=${KIT_COMMIT}
ENTRYPOINT ["/kit/scripts/run-all.sh"]
