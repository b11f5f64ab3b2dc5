FROM python:3.11-slim
WORKDIR /app
ENV HF_HUB_OFFLINE=1 PIP_NO_CACHE_DIR=1 GRADIO_ANALYTICS_ENABLED=False
COPY pyproject.toml constraints.txt README.md ./
COPY core core
COPY ingest ingest
COPY retrieval retrieval
COPY router router
COPY app app
COPY services services
COPY api api
COPY ui ui
COPY cli cli
# CPU torch; on a GPU host replace the constraint with the CUDA build you want.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install -c constraints.txt '.[plots]' \
 && mgrag setup-models
# the web app on every interface of the container (publish the port on the host's loopback, docker-compose.yml)
ENV MGRAG_UI_HOST=0.0.0.0
EXPOSE 7860
CMD ["mgrag", "serve"]
